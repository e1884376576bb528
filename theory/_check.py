"""A theorem check: the paper's claim, its predicted value, the simulated value, and a verdict."""

import dataclasses
import enum
import functools
import inspect
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import jax

import dynamics


class Verdict(enum.StrEnum):
    """How a check came out. `passed` (`"pass"`): the simulation agrees with the prediction within
    the tolerance. `failed` (`"fail"`): it does not. `deviation`: it does not, for a known,
    documented reason (given in the check's note); reported with its numbers, never counted as a
    pass."""

    passed = "pass"
    failed = "fail"
    deviation = "deviation"


class Outcome(enum.StrEnum):
    """What a check's verdict means, told apart: `passed` (`"pass"`); `exceeded` (`"tolerance
    exceeded"`): it ran and its error is above its tolerance (or not a number); `not_run`: it raised
    before it could compare (its note holds the error); `deviation` (`"documented deviation"`): it
    does not agree, for the documented cause its `deviation` gives."""

    passed = "pass"
    exceeded = "tolerance exceeded"
    not_run = "not run"
    deviation = "documented deviation"


class Bound(enum.StrEnum):
    """What a check's `predicted` is when it is a bound, not a value to match: `lower`
    (simulated ≥ predicted) or `upper` (simulated ≤ predicted)."""

    lower = "lower"
    upper = "upper"

    @property
    def relation(self) -> str:
        """The relation asked of the simulated value, `>=` or `<=`."""
        return ">=" if self is Bound.lower else "<="

    @property
    def sign(self) -> str:
        """[`Bound.relation`][] as one sign, `≥` or `≤`."""
        return "≥" if self is Bound.lower else "≤"


class Provenance(enum.StrEnum):
    """Where a check's claim comes from: the paper's text (`paper`), a derivation of ours from its
    definitions, checked numerically (`derived`), or our reconstruction of something the paper
    does not state (`recon`)."""

    paper = "paper"
    derived = "derived"
    recon = "recon"


def _member(kind: type[enum.StrEnum], field: str, value, optional: bool = False) -> enum.StrEnum | None:
    """`value` as a member of `kind` (given as the member or its string; `None` if `optional`)."""
    if optional and value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        allowed = ("None or " if optional else "") + "one of " + ", ".join(repr(m.value) for m in kind)
        raise ValueError(f"{field} must be {allowed}, got {value!r}") from None


_NUMBERS = frozenset({"predicted", "simulated", "error", "tolerance", "seconds"})
"""The fields of a [`Check`][] that are numbers (strings in JSON where not finite)."""


@dataclasses.dataclass(frozen=True)
class Check:
    """One prediction held against one simulation.

    **Fields:**

    - `paper`, `name`: where the check belongs, e.g. `("scan_snap", "theorem4_B_closed_form")`.
    - `claim`: the statement checked, with the paper's equation number.
    - `predicted`: the value the paper's formula gives, or the bound the simulated value must
      respect (see `bound`).
    - `simulated`: the value measured on a simulation.
    - `error`: the discrepancy measure compared with `tolerance` (e.g. a relative error).
    - `tolerance`: the largest `error` that passes.
    - `verdict`: a [`Verdict`][].
    - `bound`: `None` when `predicted` is a value to match; a [`Bound`][] when it is a bound.
      Where the claim is an interval, the bound `predicted` holds; the note gives the other end.
    - `provenance`: where the claim and tolerance come from, a [`Provenance`][].
    - `note`: anything a reader needs: the settings, a reference number.
    - `deviation`: the documented reason the check deviates, when the verdict is `deviation`.
    - `seconds`: the wall time the check took.
    - `compiling`: what compiling cost within it, a `dynamics.CompileStats` as a dict
      (`CompileStats.to_dict`; empty where it was not recorded).

    `verdict`, `bound` and `provenance` may be given as their members' strings (`"pass"`,
    `"lower"`, `"paper"`); any other value is refused (`ValueError`).
    """

    paper: str
    name: str
    claim: str
    predicted: float
    simulated: float
    error: float
    tolerance: float
    verdict: Verdict
    bound: Bound | None = None
    provenance: Provenance = Provenance.paper
    note: str = ""
    seconds: float = 0.0
    deviation: str = ""
    compiling: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "verdict", _member(Verdict, "verdict", self.verdict))
        object.__setattr__(self, "bound", _member(Bound, "bound", self.bound, optional=True))
        object.__setattr__(self, "provenance", _member(Provenance, "provenance", self.provenance))

    @property
    def passed(self) -> bool:
        """True unless the verdict is `fail`."""
        return self.verdict is not Verdict.failed

    @property
    def outcome(self) -> Outcome:
        """The [`Outcome`][]: the verdict, with a failure told apart as a tolerance exceeded or a
        check that did not run (it raised: its tolerance is not a number)."""
        if self.verdict is Verdict.passed:
            return Outcome.passed
        if self.verdict is Verdict.deviation:
            return Outcome.deviation
        return Outcome.not_run if math.isnan(self.tolerance) else Outcome.exceeded

    def to_dict(self) -> dict:
        """JSON-ready: non-finite numbers become strings ([`Check.from_dict`][] reads it back)."""

        def clean(v):
            return v if not isinstance(v, float) or math.isfinite(v) else str(v)

        return {k: clean(v) for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, record: Mapping) -> "Check":
        """The check that [`Check.to_dict`][] wrote as `record` (as `verify.json` holds it), its
        numbers read back from their strings where they are not finite.

        **Example:** a check that did not run keeps its outcome through JSON:

            >>> import json, math, theory
            >>> raised = theory.Check(
            ...     paper="p", name="c", claim="x", predicted=1.0, simulated=math.nan, error=math.nan,
            ...     tolerance=math.nan, verdict="fail", note="ValueError: x < 0",
            ... )
            >>> again = theory.Check.from_dict(json.loads(json.dumps(raised.to_dict())))
            >>> again.outcome.value, math.isnan(again.tolerance)
            ('not run', True)
        """
        return cls(**{name: float(value) if name in _NUMBERS else value for name, value in record.items()})


def within(
    paper: str,
    name: str,
    claim: str,
    *,
    predicted: float,
    simulated: float,
    error: float,
    tolerance: float,
    bound: Bound | str | None = None,
    provenance: Provenance | str = Provenance.paper,
    note: str = "",
    expected_deviation: str | None = None,
) -> Check:
    """A check that passes when `error <= tolerance` (a NaN error fails).

    **Arguments:** the fields of [`Check`][] (`bound` only labels `predicted` as a lower or upper
    bound: the verdict still comes from `error` and `tolerance`); `expected_deviation`, when given,
    is the documented reason a failure is expected: a failing comparison is then reported as
    `deviation`.

    **Returns:** a [`Check`][].
    """
    ok = bool(error <= tolerance)
    verdict = Verdict.passed if ok else (Verdict.deviation if expected_deviation else Verdict.failed)
    return Check(
        paper=paper,
        name=name,
        claim=claim,
        predicted=float(predicted),
        simulated=float(simulated),
        error=float(error),
        tolerance=float(tolerance),
        verdict=verdict,
        bound=bound,
        provenance=provenance,
        note=note,
        deviation=expected_deviation if verdict is Verdict.deviation else "",
    )


@dataclasses.dataclass(frozen=True)
class Measured:
    """What a declared check ([`claim`][]) measures on its simulation.

    **Fields:** `predicted`, `simulated`, `error`, `note`: as in [`Check`][]; `deviation`: the
    documented reason a failure is expected, where it depends on what was measured (it takes the
    place of the declaration's `expected_deviation`).
    """

    predicted: float
    simulated: float
    error: float
    note: str = ""
    deviation: str | None = None


@dataclasses.dataclass(frozen=True)
class Declaration:
    """What a check states before it runs: the arguments of [`theory.claim`][] (see there)."""

    claim: str
    method: str
    tolerance: float
    provenance: Provenance = Provenance.paper
    bound: Bound | None = None
    sized: bool = False
    expected_deviation: str | None = None
    printed: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "provenance", _member(Provenance, "provenance", self.provenance))
        object.__setattr__(self, "bound", _member(Bound, "bound", self.bound, optional=True))


def claim(
    statement: str,
    *,
    method: str,
    tolerance: float,
    provenance: Provenance | str = Provenance.paper,
    bound: Bound | str | None = None,
    sized: bool = False,
    expected_deviation: str | None = None,
    printed: str | None = None,
) -> Callable[[Callable[..., Measured]], Callable[..., Check]]:
    """Declare a check: the decorated function measures, the declaration states what is claimed.

    The check is named after the function and belongs to the paper whose `theory` package holds
    it. Calling the decorated function runs the measurement and returns the [`Check`][]; it takes
    `full` (default `False`: the quick sizes; ignored by a check that is not `sized`) and any
    keyword the function takes (e.g. a formula under test).

    **Arguments:**

    - `statement`: the claim, with the paper's equation number ([`Check`][]'s `claim`): one line
      of Markdown, maths in `$…$`.
    - `method`: how the prediction and the simulated value are obtained and what `error` is
      (Markdown, maths in `$…$`); the docs' table of the paper's checks shows it beside the claim.
    - `tolerance`: the largest `error` that passes.
    - `provenance`, `bound`: as in [`Check`][].
    - `sized`: the function takes `full: bool`: `True` runs its simulations at the paper's sizes,
      `False` at quick ones (fewer draws, steps or tasks); the tolerance is the same.
    - `expected_deviation`: the documented reason a failure is expected (see [`within`][]).
    - `printed`: what the paper itself prints of the result this check reproduces, quoted from its
      text with where it stands (a table, a caption, a section), and at which settings where they
      differ from the check's: the report and the paper's page show it beside the check's numbers.
      One line of Markdown.

    **Returns:** the decorator.

    **Example:**

        >>> import theory
        >>> @theory.claim(
        ...     "$e$ is 2.71828 to six digits",
        ...     method="`math.e` against 2.71828: relative error",
        ...     tolerance=1e-6,
        ...     provenance="derived",
        ... )
        ... def e_to_six_digits() -> theory.Measured:
        ...     import math
        ...     return theory.Measured(2.71828, math.e, theory.relative_error(2.71828, math.e))
        >>> check = e_to_six_digits()
        >>> check.name, check.verdict.value, check.tolerance
        ('e_to_six_digits', 'pass', 1e-06)
    """
    declaration = Declaration(
        statement, method, tolerance, provenance, bound, sized, expected_deviation, printed
    )

    def decorate(measure: Callable[..., Measured]) -> Callable[..., Check]:
        @functools.wraps(measure)
        def run(full: bool = False, **options) -> Check:
            measured = measure(full=full, **options) if sized else measure(**options)
            return within(
                _paper_of(measure),
                measure.__name__,
                declaration.claim,
                predicted=measured.predicted,
                simulated=measured.simulated,
                error=measured.error,
                tolerance=declaration.tolerance,
                bound=declaration.bound,
                provenance=declaration.provenance,
                note=measured.note,
                expected_deviation=measured.deviation or declaration.expected_deviation,
            )

        run.declaration = declaration
        return run

    return decorate


def claims(
    name: str, values: Sequence, statement: str, **declaration
) -> Callable[[Callable[..., Measured]], tuple[Callable[..., Check], ...]]:
    """Declare a family of checks that differ in one value: one check per value of `values`, each
    declared as [`claim`][] declares one, named `name` and claiming `statement` with the value in
    place of `{}` in both.

    The decorated function measures for one value, its first argument (then `full` where the
    family is `sized`, and any keyword a check takes); the decorator returns the checks, in the
    order of `values`, for the paper's `CHECKS`.

    **Arguments:** `name` and `statement`, each with one `{}` for the value; `values`, one per
    check; `declaration`: [`claim`][]'s keyword arguments (`method`, `tolerance`, ...), the same
    for every check of the family.

    **Returns:** the decorator.

    **Example:**

        >>> import theory
        >>> @theory.claims(
        ...     "square_of_{}", (2, 3), "$n^2$ is $n$ times $n$ at $n = {}$",
        ...     method="`n ** 2` against `n * n`: difference", tolerance=0.0, provenance="derived",
        ... )
        ... def squares(n: int) -> theory.Measured:
        ...     return theory.Measured(n * n, n**2, float(abs(n**2 - n * n)))
        >>> [check.__name__ for check in squares]
        ['square_of_2', 'square_of_3']
        >>> squares[1]().claim, squares[1]().simulated
        ('$n^2$ is $n$ times $n$ at $n = 3$', 9.0)
    """
    if isinstance(values, str) or "{}" not in name or "{}" not in statement:
        raise ValueError("claims: name and statement each hold {} for the value, and values is a sequence")

    def decorate(measure: Callable[..., Measured]) -> tuple[Callable[..., Check], ...]:
        declared = functools.partial(claim, **declaration)
        return tuple(
            declared(statement.replace("{}", str(value)))(
                _given(measure, value, name.replace("{}", str(value)))
            )
            for value in values
        )

    return decorate


def _given(measure: Callable[..., Measured], value, name: str) -> Callable[..., Measured]:
    """`measure` with `value` as its first argument: a function named `name` in its module, taking
    the rest of its arguments."""

    def one(*args, **kwargs):
        return measure(value, *args, **kwargs)

    functools.update_wrapper(one, measure)
    del one.__wrapped__  # its signature is the one below, not the measure's
    first, *others = (signature := inspect.signature(measure)).parameters
    one.__signature__ = signature.replace(parameters=[signature.parameters[other] for other in others])
    one.__name__ = one.__qualname__ = name
    one.__doc__ = f"{(measure.__doc__ or '').strip()}\n\nThis check: `{first}` = {value!r}."
    return one


def _paper_of(fn: Callable) -> str:
    """The paper of a check defined in `theory.<paper>...` (`""` elsewhere)."""
    parts = fn.__module__.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "theory" and not parts[1].startswith("_") else ""


def relative_error(predicted, simulated) -> float:
    """|simulated − predicted| / |predicted| (absolute error where predicted is 0)."""
    scale = abs(float(predicted))
    diff = abs(float(simulated) - float(predicted))
    return diff / scale if scale > 0 else diff


def check_makers(
    paper: str, check_fns: Iterable[Callable[..., Check]], full: bool
) -> list[Callable[[], Check]]:
    """The checks of `paper` as zero-argument makers, each reporting under its function's name.

    **Arguments:**

    - `paper`: the paper's name, attached to each maker as `maker.paper` and to each check.
    - `check_fns`: checks declared with [`claim`][].
    - `full`: the papers' sizes, else quick ones (same tolerances), for the `sized` checks.

    **Returns:** one zero-argument maker per check, in order, named after it.

    **Raises:** `ValueError` unless float64 is enabled (`jax_enable_x64`): checks compare with
    closed forms at tolerances float32 cannot reach; or for a function not declared with
    [`claim`][].
    """
    if not jax.config.read("jax_enable_x64"):
        raise ValueError(
            f"the {paper} checks need float64: call jax.config.update('jax_enable_x64', True) first"
        )
    undeclared = [fn.__name__ for fn in check_fns if not hasattr(fn, "declaration")]
    if undeclared:
        raise ValueError(f"not declared with theory.claim: {', '.join(undeclared)} (checks of {paper})")
    return [_maker(paper, fn, full) for fn in check_fns]


def _maker(paper: str, fn: Callable[..., Check], full: bool) -> Callable[[], Check]:
    def make() -> Check:
        return dataclasses.replace(fn(full=full), paper=paper)

    maker = functools.update_wrapper(make, fn)
    maker.paper = paper
    return maker


def run_checks(
    makers: Iterable[Callable[[], Check]], progress: Callable[[str], None] | None = None
) -> list[Check]:
    """Run check makers in order, timing each and recording what compiling cost within it
    (`Check.compiling`).

    A maker that raises produces a failing check carrying the error message: a crash is a
    finding, not something to skip.

    **Arguments:**

    - `makers`: zero-argument callables returning a [`Check`][]; `maker.__name__` names it.
    - `progress`: called with each maker's name before it runs.

    **Returns:** the checks, in order.
    """
    checks = []
    for make in makers:
        if progress is not None:
            progress(make.__name__)
        start = time.perf_counter()
        with dynamics.recording_compiles() as record:
            try:
                check = make()
            except Exception as err:  # noqa: BLE001 - reported as a failing check
                check = _raised(make, err)
        seconds = time.perf_counter() - start
        checks.append(dataclasses.replace(check, seconds=seconds, compiling=record.stats.to_dict()))
    return checks


def _raised(make: Callable[[], Check], err: Exception) -> Check:
    """The failing check of a maker that raised `err`, carrying its message."""
    return Check(
        paper=getattr(make, "paper", "?"),
        name=make.__name__,
        claim="(the check raised)",
        predicted=math.nan,
        simulated=math.nan,
        error=math.nan,
        tolerance=math.nan,
        verdict=Verdict.failed,
        note=f"{type(err).__name__}: {err}",
    )
