"""Helpers shared by the tests."""

import importlib.util
import math
import re
from pathlib import Path

import equinox as eqx

REPOSITORY = Path(__file__).parents[1]
"""The repository's root."""


def load_file(relative: str):
    """The module in the repository's file `relative` (e.g. `"docs/hooks/papers.py"`), loaded anew:
    the docs' hooks and the benchmarks are scripts, not packages."""
    path = REPOSITORY / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tree_allclose(x, y, *, rtol=1e-10, atol=1e-12) -> bool:
    """True when two PyTrees have the same structure and each pair of leaves the same shape, the
    same dtype and close values (`equinox.tree_equal`)."""
    return bool(eqx.tree_equal(x, y, rtol=rtol, atol=atol))


def assert_sweep_round_trip(dataset, tmp_path) -> None:
    """Saving then loading a sweep's dataset (zarr) gives back every variable, coordinate and
    attribute unchanged."""
    import xarray as xr

    from dynamics import load_sweep
    from dynamics.store import save_sweep

    loaded = load_sweep(save_sweep(dataset, tmp_path / "sweep.zarr"))
    xr.testing.assert_identical(loaded.load(), dataset)


def printed_ratio(text: str, label: str) -> float:
    """The number a benchmark printed on its line `"<label>: <number>"`."""
    match = re.search(rf"^{re.escape(label)}: (\S+)$", text, re.MULTILINE)
    assert match, f"no line {label!r} in the output:\n{text}"
    return float(match.group(1))


def positive_finite(x: float) -> bool:
    """True for a finite number above zero (a benchmark's time or ratio)."""
    return math.isfinite(x) and x > 0


def int64_sizes(jaxpr) -> list[int]:
    """The sizes of every int64 value that `jaxpr` (and the programs inside its operations)
    computes: in float64 mode JAX's default integer is int64, which a GPU compiles many times slower
    than int32 in a large tensor."""
    import jax.numpy as jnp

    return value_sizes(jaxpr, jnp.int64)


def value_sizes(jaxpr, dtype=None) -> list[int]:
    """The sizes of every value (of `dtype`, or of any) that `jaxpr` and the programs inside its
    operations compute."""
    import jax.extend

    sizes = []
    for eqn in jaxpr.eqns:
        sizes += [
            math.prod(v.aval.shape)
            for v in eqn.outvars
            if hasattr(v.aval, "shape") and (dtype is None or getattr(v.aval, "dtype", None) == dtype)
        ]
        for inner in jax.extend.core.jaxprs_in_params(eqn.params):
            sizes += value_sizes(inner, dtype)
    return sizes


ASCII_MATHS = re.compile(
    r"[\w)]\^[\w({+-]"  # x^2, e^(-a), ((M-1)/M)^2, L^-n
    r"|[<>!]=|->|>>|<<|\+-|\+/-"  # >=, <=, <=>, !=, ->, >>, +-
    r"|\|\|"  # ||W||
    r"|\bsqrt\(|\\[A-Za-z]+"  # sqrt(T), \alpha outside $…$
    r"|\b[A-Za-z]\*|\w\*\w| \* |~"  # W*, eta2*lambda, T * error, V~, U ~ N(0, 1)
    r"|\b[A-Za-z]_\d|\w_dot\b"  # L_0, z_dot
    r"|\b(?:eta|alpha|beta|gamma|delta|epsilon|eps|zeta|theta|kappa|lambda|mu|nu|xi|pi|rho|sigma|tau|phi"
    r"|chi|psi|omega|Gamma|Delta|Theta|Lambda|Xi|Pi|Sigma|Phi|Psi|Omega)(?:\d|_|\b)"  # eta0, beta_n, tau
)
"""Maths typed as ASCII in plain text: `x^2`, `e^(-a)`, `>=`, `->`, `||W||`, `sqrt(T)`, `W*`, `L_0`,
`eta0`, `beta_n`, `kappa` (to be written x², e⁻ᵃ, ≥, →, ‖W‖, √T, W⋆, L₀, η₀, β_n, κ). Match it on
text without its code: see [`plain_maths`][]."""


def plain_maths(text: str) -> str:
    """`text` without what it names as code (its backticked spans, where `beta_max` may stand), the
    part of a plain-text note that [`ASCII_MATHS`][] reads."""
    return re.sub(r"`[^`]*`", "", text)
