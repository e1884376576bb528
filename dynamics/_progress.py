"""Progress inside long runs: a bar over the time of a flow (Diffrax's own meter) or over the steps
of a scan, switched on for the duration of a [`progress_inside`][] block; and progress over the
blocks of a sweep or the chunks of a batch (`progress_over`): a bar on a terminal, one line
per block in a log.

The switch is read when a run is traced, so a compiled run keeps the meters it was traced with:
[`run_many`][] compiles one program with meters and one without, and uses the one asked for.
"""

import contextlib
import contextvars
import itertools
import sys
import threading
import time
from collections.abc import Iterator, Sequence

import diffrax
import jax
from jaxtyping import Array, Int
from tqdm.auto import tqdm

_INSIDE = contextvars.ContextVar("progress_inside", default=False)
_TICKS = 100
"""Updates of a scan's bar over a whole run (at most)."""
_bars: dict[int, tqdm] = {}
_bar_ids = itertools.count()


@contextlib.contextmanager
def progress_inside(enabled: bool = True) -> Iterator[None]:
    """Within the block, flows and scans traced by [`ode_flow`][] and [`train`][] carry progress
    meters: a flow's bar follows its time from `t0` to `t1` (Diffrax's `TqdmProgressMeter`), a
    scan's bar its steps (updated about 100 times a run). Under `vmap` a batch shares one bar.

    **Arguments:** `enabled`: whether the meters are on inside the block.

    **Example:** a flow with its bar (drawn on stderr while it runs):

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> with dynamics.progress_inside():
        ...     run = jax.jit(lambda y0: dynamics.ode_flow(lambda t, y, args: -y, y0, t1=5.0))(jnp.array(1.0))
        >>> dynamics.stop_reason(run.stop, run.event, run.event_names), round(float(run.final), 6)
        ('completed', 0.006738)
    """
    token = _INSIDE.set(enabled)
    try:
        yield
    finally:
        _INSIDE.reset(token)


def meters_on() -> bool:
    """Whether runs traced now carry progress meters (inside [`progress_inside`][])."""
    return _INSIDE.get()


def flow_meter() -> diffrax.AbstractProgressMeter:
    """The progress meter of a flow traced now: Diffrax's tqdm bar when meters are on."""
    return diffrax.TqdmProgressMeter() if meters_on() else diffrax.NoProgressMeter()


def scan_ticker(num_steps: int):
    """`tick(step)` for a scan of `num_steps` steps traced now, or `None` when meters are off:
    called at every step inside the scan (`step` not batched), it advances a host-side bar every
    `num_steps // 100` steps and closes it at the last step."""
    if not meters_on():
        return None
    bar_id, period = next(_bar_ids), max(1, num_steps // _TICKS)

    def update(step):
        step = int(step)
        if bar_id not in _bars:
            _bars[bar_id] = tqdm(total=num_steps, desc="steps", unit="step", leave=False)
        _bars[bar_id].n = min(step + 1, num_steps)
        _bars[bar_id].refresh()
        if step + 1 >= num_steps:
            _bars.pop(bar_id).close()

    def tick(step: Int[Array, ""]) -> None:
        due = (step % period == period - 1) | (step == num_steps - 1)
        jax.lax.cond(due, lambda: jax.debug.callback(update, step), lambda: None)

    return tick


def on_terminal() -> bool:
    """Whether progress goes to a terminal (stderr is one), where bars redraw in place."""
    return sys.stderr.isatty()


def inner_meters(progress: bool) -> bool:
    """Whether runs asked for `progress` carry bars inside (see [`progress_inside`][]): only on a
    terminal; in a log, each redraw of a bar would leave a line."""
    return progress and on_terminal()


def duration(seconds: float) -> str:
    """`seconds` in words, to two units or two digits: `0.042 s`, `4.2 s`, `21 s`, `3 min 5 s`,
    `8 h 7 min`, `2 d 3 h`.

    **Example:**

        >>> import dynamics
        >>> d = dynamics.duration
        >>> d(0.0421), d(4.24), d(21.4), d(185), d(29247), d(186000)
        ('0.042 s', '4.2 s', '21 s', '3 min 5 s', '8 h 7 min', '2 d 3 h')
    """
    if seconds < 1:
        return f"{seconds:.2g} s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    for big, name, small, small_name in (
        (86400, "d", 3600, "h"),
        (3600, "h", 60, "min"),
        (60, "min", 1, "s"),
    ):
        if whole >= big:
            return f"{whole // big} {name} {whole % big // small} {small_name}"
    return f"{whole} s"


HEARTBEAT = 60.0
"""Seconds without a piece ending after which a log says that the work goes on (then every
`HEARTBEAT`): a piece can run for hours (one block holding every run)."""


class _Lines:
    """Progress as one line per finished piece, `blocks: 3/8 done (12.4 s, about 21 s left)`, for a
    log or a pipe, where a bar's redraws would each leave a line; with a postfix as tqdm's,
    `blocks: 8/8 done (0.1 s; 0 run here, 8 found written)`. While no piece ends for
    [`HEARTBEAT`][] seconds, a line says that the work goes on:
    `blocks: 0/1 done (2 min 0 s so far; no block done yet to estimate the time from)`.

    What is left: the pieces run in their order on `workers` at once, each starting as one ends;
    each finished piece's own time gives the seconds per unit of weight, and the pieces running and
    to come are laid out on the workers at that pace (a running piece less what it has run)."""

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str,
        weights: Sequence[float] | None = None,
        quiet: bool = False,
        workers: int = 1,
    ):
        self.total, self.desc, self.unit, self.n, self.quiet = total, desc, unit, 0, quiet
        self.weights = [float(w) for w in weights] if weights is not None else [1.0] * total
        self.workers = max(1, int(workers))
        self.start = self.ended = self.said = time.perf_counter()
        self.running = {piece: self.start for piece in range(min(self.workers, total))}
        self.next_piece = len(self.running)
        self.seconds_done = self.weight_done = 0.0
        self.postfix = ""
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text

    def _print(self, detail: str) -> None:
        if not self.quiet:
            print(f"{self.desc}: {self.n}/{self.total} done ({detail})", file=sys.stderr, flush=True)

    def _left(self, now: float) -> float:
        """The seconds left at `now` (after one piece or more): the pieces running and to come laid
        out on the workers, each taking its weight at the pace of the pieces done."""
        pace = self.seconds_done / max(self.weight_done, 1e-300)
        free = sorted(max(self.weights[p] * pace - (now - began), 0.0) for p, began in self.running.items())
        free += [0.0] * (self.workers - len(free))
        for piece in range(self.next_piece, self.total):
            free.sort()
            free[0] += self.weights[piece] * pace
        return max(free, default=0.0)

    def update(self, n: int = 1, piece: int | None = None) -> None:
        """Count `n` pieces done: `piece` (its index), else the ones running longest."""
        now = time.perf_counter()
        for _ in range(n):
            done = piece if piece is not None else min(self.running, default=None)  # started first
            self.seconds_done += now - self.running.pop(done, self.start)
            self.weight_done += 1.0 if done is None else self.weights[done]
            self.n += 1
            if self.next_piece < self.total:
                self.running[self.next_piece] = now
                self.next_piece += 1
        self.ended = self.said = now
        left = f", about {duration(self._left(now))} left" if self.n < self.total else ""
        self._print(f"{duration(now - self.start)}{left}{f'; {self.postfix}' if self.postfix else ''}")

    def _heartbeat(self) -> None:
        while not self._stop.wait(min(1.0, HEARTBEAT / 4)):
            now = time.perf_counter()
            if now - self.said < HEARTBEAT or self.n >= self.total:
                continue
            self.said = now
            if self.n:
                since = f"{duration(now - self.ended)} since a {self.unit} ended"
                news = f"{since}, about {duration(self._left(now))} left"
            else:
                news = f"no {self.unit} done yet to estimate the time from"
            self._print(f"{duration(now - self.start)} so far; {news}")

    def __enter__(self):
        self._beat.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()


def progress_over(
    total: int,
    desc: str,
    unit: str,
    enabled: bool,
    weights: Sequence[float] | None = None,
    workers: int = 1,
):
    """Progress over `total` pieces (the blocks of a sweep, the chunks of a batch, the jobs of a
    launch): a tqdm bar on a terminal, one line per piece elsewhere (`on_terminal`), each with
    the time left at the pace of the pieces done; nothing unless `enabled`.

    **Arguments:** `total`: the pieces; `desc`: what they are (`"blocks"`); `unit`: one of them
    (`"block"`); `enabled`: whether to show progress at all; `weights`: the pieces' expected
    costs (any unit), when they differ: the time left is then the work left at the pace of the
    work done, and the progress is one line per piece wherever it is shown (pieces that print
    lines of their own, as worker processes do, would break a bar); `workers`: how many pieces
    run at once (in their order, each starting as one ends), for the time left.

    **Returns:** a context manager whose `update()` counts one piece done (`update(piece=i)`:
    piece `i`, with `weights`).

    **Example:** in a log (stderr not a terminal), a line per piece:

        >>> import contextlib
        >>> import io
        >>> import dynamics
        >>> log = io.StringIO()
        >>> with contextlib.redirect_stderr(log), dynamics.progress_over(2, "jobs", "job", True) as bar:
        ...     bar.update()
        ...     bar.update()
        >>> [line.split(" (")[0] for line in log.getvalue().splitlines()]
        ['jobs: 1/2 done', 'jobs: 2/2 done']
    """
    if weights is not None or (enabled and not on_terminal()):
        return _Lines(total, desc, unit, weights, quiet=not enabled, workers=workers)
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled)
