"""The Scan and Snap theorem checks: every quick check passes, and a wrong formula fails."""

import jax
import jax.numpy as jnp
import pytest

import tasks.scan_snap as ss
import theory
from theory import scan_snap

NAMES = [maker.__name__ for maker in scan_snap.checks(quick=True)]


@pytest.fixture(scope="module")
def results():
    """Every quick check, run once for the module."""
    return {check.name: check for check in theory.run_paper("scan_snap", quick=True)}


def test_makers_are_named_after_their_checks(results):
    assert len(set(NAMES)) == len(NAMES) > 20
    assert list(results) == NAMES
    for check in results.values():
        assert check.paper == "scan_snap"
        assert check.provenance in ("paper", "derived", "recon")
        assert check.note


@pytest.mark.parametrize("name", NAMES)
def test_quick_check_does_not_fail(results, name):
    c = results[name]
    assert c.verdict != "fail", (
        f"{name}: predicted {c.predicted!r}, simulated {c.simulated!r}, error {c.error!r} > tolerance "
        f"{c.tolerance!r}. {c.note}"
    )


@pytest.mark.slow
def test_full_checks_do_not_fail():
    """The paper-size checks (`attnflow verify --paper scan_snap`), about a minute."""
    failed = [c for c in theory.run_paper("scan_snap", quick=False) if c.verdict == "fail"]
    assert not failed, "; ".join(f"{c.name}: error {c.error!r} > {c.tolerance!r}. {c.note}" for c in failed)


def _e_prime_sign_typo(t, F, eta_y):
    """Eqn 9 with App. D.1's printed E' = (I + E)^{-1} − I, the sign typo of spec §8."""
    M, K = F.shape
    eye = jnp.eye(K, dtype=F.dtype)
    typo = -ss.e_prime(F.T @ F - eye)
    return ss.speed_gamma(t, M, K, eta_y) * F @ (eye - typo) @ ss.q_matrix(K, M)


@pytest.mark.parametrize(
    "check, formula",
    [
        # the paper's printed B = ¼ ln(C_0 + 4Γ) is off by ¼ ln C_0 for C_0 = 5.68e-3 (spec §8)
        (scan_snap.theorem4_B_closed_form, ss.phase_B_paper),
        (scan_snap.theorem1_backprop_gradient, _e_prime_sign_typo),
        (scan_snap.lemma6_closed_form, lambda t, M, eta_y: (1 + 1e-6) * ss.h_continuous(t, M, eta_y)),
    ],
)
def test_a_wrong_formula_fails(results, check, formula):
    del results  # run after the fixture, so the shared simulations are cached
    assert check(True).verdict == "pass"
    wrong = check(True, formula=formula)
    assert wrong.verdict == "fail", (
        f"{wrong.name} with a wrong formula: error {wrong.error} <= {wrong.tolerance}"
    )


def test_checks_refuse_float32():
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match="float64"):
            scan_snap.checks(quick=True)
    finally:
        jax.config.update("jax_enable_x64", True)
