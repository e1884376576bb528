"""What compiling cost: the programs XLA compiled, those loaded from JAX's persistent cache, and
the seconds spent tracing, lowering and compiling, read from JAX's monitoring events."""

import contextlib
import dataclasses
import threading
from collections.abc import Iterator

import jax

_TRACE = "/jax/core/compile/jaxpr_trace_duration"
_LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
_COMPILE = "/jax/core/compile/backend_compile_duration"
_CACHE_HIT = "/jax/compilation_cache/cache_hits"
_SLOWEST = 5
"""How many of the slowest compilations [`CompileStats`][] names."""


@dataclasses.dataclass(frozen=True)
class CompileStats:
    """What compiling cost over a stretch of work (see [`recording_compiles`][]).

    **Fields:**

    - `compiled`: programs XLA compiled.
    - `cached`: programs loaded from JAX's persistent compilation cache instead.
    - `trace_seconds`, `lower_seconds`, `compile_seconds`: seconds spent tracing Python into
      programs, lowering them to XLA, and compiling them (a program loaded from the cache counts
      under `load_seconds` instead).
    - `load_seconds`: seconds spent loading programs from the cache.
    - `slowest`: the longest compilations, `(program name, seconds)`, the longest first (at most 5).

    Stats add up (`a + b`), e.g. over the pieces of a command.

    **Example:**

        >>> import jax
        >>> import numpy as np
        >>> import dynamics
        >>> with dynamics.recording_compiles() as record:
        ...     _ = jax.jit(lambda x: x * 3 + 1)(np.arange(4.0))
        >>> stats = record.stats
        >>> stats.compiled + stats.cached, stats.total_seconds > 0
        (1, True)
        >>> (stats + stats).compiled == 2 * stats.compiled
        True
    """

    compiled: int = 0
    cached: int = 0
    trace_seconds: float = 0.0
    lower_seconds: float = 0.0
    compile_seconds: float = 0.0
    load_seconds: float = 0.0
    slowest: tuple[tuple[str, float], ...] = ()

    def __add__(self, other: "CompileStats") -> "CompileStats":
        slowest = sorted(self.slowest + other.slowest, key=lambda item: -item[1])[:_SLOWEST]
        return CompileStats(
            compiled=self.compiled + other.compiled,
            cached=self.cached + other.cached,
            trace_seconds=self.trace_seconds + other.trace_seconds,
            lower_seconds=self.lower_seconds + other.lower_seconds,
            compile_seconds=self.compile_seconds + other.compile_seconds,
            load_seconds=self.load_seconds + other.load_seconds,
            slowest=tuple(slowest),
        )

    @property
    def total_seconds(self) -> float:
        """Tracing, lowering, compiling and loading together."""
        return self.trace_seconds + self.lower_seconds + self.compile_seconds + self.load_seconds

    def to_dict(self) -> dict:
        """JSON-ready, the seconds rounded to milliseconds."""
        record = dataclasses.asdict(self)
        for name in ("trace_seconds", "lower_seconds", "compile_seconds", "load_seconds"):
            record[name] = round(record[name], 3)
        record["slowest"] = [[name, round(seconds, 3)] for name, seconds in self.slowest]
        return record

    @classmethod
    def from_dict(cls, record: dict) -> "CompileStats":
        """The inverse of [`CompileStats.to_dict`][] (an empty record: no compiling)."""
        slowest = tuple((str(name), float(seconds)) for name, seconds in record.get("slowest", ()))
        return cls(**{**record, "slowest": slowest})

    def summary(self) -> str:
        """One line, e.g. `12 programs compiled (34.5 s: tracing 3.1, lowering 1.2, compiling
        30.2), 3 loaded from the cache (0.2 s)`."""
        plural = "" if self.compiled == 1 else "s"
        text = (
            f"{self.compiled} program{plural} compiled ({self.total_seconds - self.load_seconds:.1f} s: "
            f"tracing {self.trace_seconds:.1f}, lowering {self.lower_seconds:.1f}, compiling "
            f"{self.compile_seconds:.1f})"
        )
        return text + f", {self.cached} loaded from the cache ({self.load_seconds:.1f} s)"


class CompileRecord:
    """The compiling seen since a [`recording_compiles`][] block began; `stats` reads it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stats = CompileStats()

    @property
    def stats(self) -> CompileStats:
        """The [`CompileStats`][] so far."""
        with self._lock:
            return self._stats

    def _add(self, **change) -> None:
        with self._lock:
            self._stats = self._stats + CompileStats(**change)


_records: list[CompileRecord] = []
_hit = threading.local()
_listening = threading.Lock()


@contextlib.contextmanager
def recording_compiles() -> Iterator[CompileRecord]:
    """Record, within the block, what compiling costs in this process (every thread): blocks may
    nest, and each sees everything compiled inside it.

    **Returns:** a record whose `stats` is the [`CompileStats`][] so far (read it in the block or
    after).

    **Example:** the second call of the same function compiles nothing:

        >>> import jax
        >>> import numpy as np
        >>> import dynamics
        >>> f = jax.jit(lambda x: x + 1)
        >>> with dynamics.recording_compiles() as first:
        ...     _ = f(np.zeros(3))
        >>> with dynamics.recording_compiles() as second:
        ...     _ = f(np.ones(3))
        >>> first.stats.compiled + first.stats.cached, second.stats.compiled + second.stats.cached
        (1, 0)
    """
    _listen()
    record = CompileRecord()
    _records.append(record)
    try:
        yield record
    finally:
        _records.remove(record)


def _listen() -> None:
    """Register the listeners with JAX's monitoring, once per process."""
    with _listening:
        if getattr(_listen, "done", False):
            return
        jax.monitoring.register_event_listener(_on_event)
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        _listen.done = True


def _on_event(event: str, **labels) -> None:
    if event == _CACHE_HIT:
        _hit.value = True  # the backend compile event that ends this compilation follows, in this thread


def _on_duration(event: str, seconds: float, **labels) -> None:
    hit = event == _COMPILE and getattr(_hit, "value", False)
    if hit:
        _hit.value = False
    if not _records:
        return
    if event == _TRACE:
        change = {"trace_seconds": seconds}
    elif event == _LOWER:
        change = {"lower_seconds": seconds}
    elif event == _COMPILE:
        if hit:
            change = {"cached": 1, "load_seconds": seconds}
        else:
            name = str(labels.get("fun_name", "?"))
            change = {"compiled": 1, "compile_seconds": seconds, "slowest": ((name, seconds),)}
    else:
        return
    for record in list(_records):
        record._add(**change)
