"""A theorem check: the paper's claim, its predicted value, the simulated value, and a verdict."""

import dataclasses
import functools
import inspect
import json
import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import jax

import dynamics

VERDICTS = ("pass", "fail", "deviation")
"""`pass`: the simulation agrees with the prediction within the tolerance. `fail`: it does not.
`deviation`: it does not, and the specification documents why (the reason is in `note`);
reported with its numbers, never counted as a pass."""

BOUNDS = {"lower": ">=", "upper": "<="}
"""What `Check.bound` may be (besides `None`), and the relation it asks of the simulated value:
`"lower"`: `predicted` is a lower bound, simulated ≥ predicted; `"upper"`: an upper bound,
simulated ≤ predicted."""

PROVENANCES = ("paper", "derived", "recon")
"""Where a check's claim comes from: the paper's text, a derivation of ours from its definitions
(checked numerically), or our reconstruction of something the paper does not state."""


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
    - `verdict`: one of [`VERDICTS`][].
    - `bound`: `None` when `predicted` is a value to match; `"lower"` or `"upper"` when it is a
      bound (see [`BOUNDS`][]). Where the claim is an interval, the bound `predicted` holds; the
      note gives the other end.
    - `provenance`: where the claim and tolerance come from, one of [`PROVENANCES`][]: `paper`,
      `derived` or `recon` (our reconstruction of something the paper does not state).
    - `note`: anything a reader needs: the settings, a documented deviation, a reference number.
    - `seconds`: the wall time the check took.
    """

    paper: str
    name: str
    claim: str
    predicted: float
    simulated: float
    error: float
    tolerance: float
    verdict: str
    bound: str | None = None
    provenance: str = "paper"
    note: str = ""
    seconds: float = 0.0

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.bound is not None and self.bound not in BOUNDS:
            raise ValueError(f"bound must be None or one of {tuple(BOUNDS)}, got {self.bound!r}")
        if self.provenance not in PROVENANCES:
            raise ValueError(f"provenance must be one of {PROVENANCES}, got {self.provenance!r}")

    @property
    def passed(self) -> bool:
        """True unless the verdict is `fail`."""
        return self.verdict != "fail"

    def to_dict(self) -> dict:
        """JSON-ready: non-finite numbers become strings."""

        def clean(v):
            return v if not isinstance(v, float) or math.isfinite(v) else str(v)

        return {k: clean(v) for k, v in dataclasses.asdict(self).items()}


def within(
    paper: str,
    name: str,
    claim: str,
    *,
    predicted: float,
    simulated: float,
    error: float,
    tolerance: float,
    bound: str | None = None,
    provenance: str = "paper",
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
    verdict = "pass" if ok else ("deviation" if expected_deviation else "fail")
    if expected_deviation and not ok:
        note = f"{note} Expected deviation: {expected_deviation}".strip()
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
    )


def relative_error(predicted, simulated) -> float:
    """|simulated − predicted| / |predicted| (absolute error where predicted is 0)."""
    scale = abs(float(predicted))
    diff = abs(float(simulated) - float(predicted))
    return diff / scale if scale > 0 else diff


def check_makers(
    paper: str, check_fns: Iterable[Callable[..., Check]], quick: bool
) -> list[Callable[[], Check]]:
    """The checks of `paper` as zero-argument makers, each reporting under its function's name.

    A check function takes `quick` (smaller simulations, same tolerances) only when it has a quick
    mode; the others take no argument.

    **Arguments:**

    - `paper`: the paper's name, attached to each maker as `maker.paper` and to each check.
    - `check_fns`: functions `name(quick) -> Check` or `name() -> Check`.
    - `quick`: smaller simulations (same tolerances).

    **Returns:** one zero-argument maker per check function, in order, named after it.

    **Raises:** `ValueError` unless float64 is enabled (`jax_enable_x64`): checks compare with
    closed forms at tolerances float32 cannot reach.
    """
    if not jax.config.read("jax_enable_x64"):
        raise ValueError(
            f"the {paper} checks need float64: call jax.config.update('jax_enable_x64', True) first"
        )
    return [_maker(paper, fn, quick) for fn in check_fns]


def _maker(paper: str, fn: Callable[..., Check], quick: bool) -> Callable[[], Check]:
    takes_quick = "quick" in inspect.signature(fn).parameters

    def make() -> Check:
        check = fn(quick=quick) if takes_quick else fn()
        return dataclasses.replace(check, paper=paper, name=fn.__name__)

    maker = functools.update_wrapper(make, fn)
    maker.paper = paper
    return maker


def run_checks(
    makers: Iterable[Callable[[], Check]], progress: Callable[[str], None] | None = None
) -> list[Check]:
    """Run check makers in order, timing each.

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
        try:
            check = make()
        except Exception as err:  # noqa: BLE001 - reported as a failing check
            check = Check(
                paper=getattr(make, "paper", "?"),
                name=make.__name__,
                claim="(the check raised)",
                predicted=math.nan,
                simulated=math.nan,
                error=math.nan,
                tolerance=math.nan,
                verdict="fail",
                note=f"{type(err).__name__}: {err}",
            )
        checks.append(dataclasses.replace(check, seconds=time.perf_counter() - start))
    return checks


def format_table(checks: list[Check]) -> str:
    """A plain-text table: verdict, paper, name, predicted, simulated, error / tolerance.

    A check whose `predicted` is a bound shows, under the predicted and simulated columns, the
    relation it asks of the simulated value instead of the two values, e.g. `0.96239 >= bound 0.5`
    (the verdict says whether it holds within the tolerance).
    """
    header = (
        f"{'verdict':<9} {'paper':<12} {'check':<40} {'predicted':>14} {'simulated':>14}"
        f" {'error':>10} {'tol':>9}"
    )
    lines = [header, "-" * len(header)]
    for c in checks:
        if c.bound is None:
            values = f"{c.predicted:>14.5g} {c.simulated:>14.5g}"
        else:
            relation = f"{c.simulated:.5g} {BOUNDS[c.bound]} bound {c.predicted:.5g}"
            values = f"{relation:>29}"
        lines.append(
            f"{c.verdict.upper():<9} {c.paper:<12.12} {c.name:<40.40} {values}"
            f" {c.error:>10.3g} {c.tolerance:>9.2g}"
        )
    counts = {v: sum(c.verdict == v for c in checks) for v in VERDICTS}
    lines.append(
        f"checks: {counts['pass']} pass, {counts['fail']} fail, {counts['deviation']} expected deviation(s)"
    )
    return "\n".join(lines)


def write_json(checks: list[Check], path: str | Path, meta: dict) -> Path:
    """Write the checks and `meta` (versions, options) to `path` as JSON, whole or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with dynamics.atomic_write(path) as f:
        json.dump({"meta": meta, "checks": [c.to_dict() for c in checks]}, f, indent=2)
    return path
