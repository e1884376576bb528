"""The Scan and Snap theorem checks: each is named after its function, a wrong formula fails, and
(under `-m slow`, since `attnflow reproduce` runs them in CI) every quick check passes."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import theory
from theory import scan_snap
from theory.scan_snap import closed_forms as cf

NAMES = [check.__name__ for check in scan_snap.CHECKS]

TEXT_NAMES = ["fig7_attention_freezes", "fig10_entropy_falls_with_lr"]
"""The real-text checks: minutes of transformer training even when quick."""

CORE_NAMES = [name for name in NAMES if name not in TEXT_NAMES]
"""The checks run together here under `-m slow`, in the papers' order."""


def _run(full: bool, names: list[str] = NAMES) -> list[theory.Check]:
    fns = [fn for fn in scan_snap.CHECKS if fn.__name__ in names]
    return theory.run_checks(theory.check_makers("scan_snap", fns, full))


@pytest.fixture(scope="module")
def results():
    """Every quick check but the real-text ones, run once for the module."""
    return {check.name: check for check in _run(False, CORE_NAMES)}


def test_makers_are_named_after_their_checks():
    assert len(set(NAMES)) == len(NAMES) > 20
    assert set(TEXT_NAMES) <= set(NAMES)
    makers = theory.check_makers("scan_snap", scan_snap.CHECKS, full=False)
    assert [maker.__name__ for maker in makers] == NAMES
    assert {maker.paper for maker in makers} == {"scan_snap"}
    check = makers[NAMES.index("lemma6_closed_form")]()  # one cheap one, run
    assert (check.paper, check.name) == ("scan_snap", "lemma6_closed_form") and check.note


def test_closed_forms_of_the_checks():
    M, K, eta_y = 1000, 10, 0.5
    t = np.array([1.0, 10.0, 100.0, 1000.0])
    h = np.asarray(cf.h_continuous(t / K, M, eta_y))
    np.testing.assert_allclose(cf.gamma_of_h(h, M), cf.speed_gamma(t, M, K, eta_y), rtol=1e-12)
    # Lemma 9: gamma(1) ~ eta_Y t / K (ratio 0.998), gamma(t) -> K ln(M eta_Y t / K) / (eta_Y t)
    assert cf.gamma_of_h(h[0], M) / cf.gamma_scanning(1.0, K, eta_y) == pytest.approx(0.998, abs=1e-3)
    late = float(cf.speed_gamma(1e5, M, K, eta_y)) / cf.gamma_snapping(1e5, M, K, eta_y)
    assert late == pytest.approx(1.001, abs=1e-3)
    B = np.linspace(0.0, 2.0, 5)
    lower, upper = cf.eqn12_bounds(0.5, B)
    np.testing.assert_allclose(upper, cf.growth_factor(B, 0.0))
    assert np.all(lower <= upper) and lower[0] == upper[0] == 1.0
    assert cf.hoeffding_band(np.array([99.0]), 0.05) == pytest.approx(np.sqrt(np.log(40) / 198))


def _assert_not_failed(c: theory.Check) -> None:
    assert c.verdict != "fail", (
        f"{c.name}: predicted {c.predicted!r}, simulated {c.simulated!r}, error {c.error!r} > tolerance "
        f"{c.tolerance!r}. {c.note}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", CORE_NAMES)
def test_quick_check_does_not_fail(results, name):
    _assert_not_failed(results[name])
    assert results[name].note


@pytest.mark.slow
def test_quick_text_checks_do_not_fail():
    """The real-text checks as `attnflow verify` runs them (quick sizes), about five minutes."""
    for check in _run(False, TEXT_NAMES):
        _assert_not_failed(check)


@pytest.mark.slow
def test_full_checks_do_not_fail():
    """The paper-size checks (`attnflow verify --paper scan_snap`), about a minute."""
    failed = [c for c in _run(full=True) if c.verdict == "fail"]
    assert not failed, "; ".join(f"{c.name}: error {c.error!r} > {c.tolerance!r}. {c.note}" for c in failed)


@pytest.mark.slow
def test_fig10_at_its_quick_size_fails_where_the_seeds_cannot_tell_the_rates_apart():
    """Fig. 10's quick size (150 steps on 500 lines, 3 seeds) can fail: at learning rates 2% apart
    the seeds' entropies do not fall in order (at Fig. 10's rates they do, in `attnflow verify`)."""
    check = scan_snap.fig10_entropy_falls_with_lr(lrs=(3.0, 3.06, 3.12, 3.18, 3.24))
    assert check.verdict == "fail", check.note


def _e_prime_sign_typo(t, F, eta_y):
    """Eqn 9 with App. D.1's printed E' = (I + E)^{-1} − I, a sign typo (Lemma 14 has the other sign)."""
    M, K = F.shape
    eye = jnp.eye(K, dtype=F.dtype)
    typo = -cf.e_prime(F.T @ F - eye)
    return cf.speed_gamma(t, M, K, eta_y) * F @ (eye - typo) @ cf.q_matrix(K, M)


@pytest.mark.parametrize(
    "check, formula",
    [
        # the paper's printed B = ¼ ln(C_0 + 4Γ) is off by ¼ ln C_0 for C_0 = 5.68e-3
        (functools.partial(scan_snap.theorem4_B_closed_form, full=False), cf.phase_B_paper),
        (scan_snap.theorem1_backprop_gradient, _e_prime_sign_typo),
        (scan_snap.lemma6_closed_form, lambda t, M, eta_y: (1 + 1e-6) * cf.h_continuous(t, M, eta_y)),
    ],
)
def test_a_wrong_formula_fails(check, formula):
    """The check with a wrong formula fails (with the right one it passes in `attnflow verify`,
    which CI runs: not run again here)."""
    wrong = check(formula=formula)
    assert wrong.verdict == "fail", (
        f"{wrong.name} with a wrong formula: error {wrong.error} <= {wrong.tolerance}"
    )


def test_checks_refuse_float32():
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match="float64"):
            theory.check_makers("scan_snap", scan_snap.CHECKS, full=False)
    finally:
        jax.config.update("jax_enable_x64", True)
