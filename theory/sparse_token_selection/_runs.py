"""Simulations behind the sparse-token-selection checks, cached so a verify run makes each once."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

import dynamics
import tasks.sparse_token_selection as sts

PAPER_SIZE = sts.STSConfig(d=10, T=200, q=3, pe_sampler="onehot")
"""Theorem 1's instance at the paper's experiment size: T = 200, q = 3 (paper), d = 10 (recon)."""

SMALL = sts.STSConfig(d=3, T=8, q=2, pe_sampler="onehot")
"""The small one-hot instance of the invariant-set checks (subsets enumerated, exact in X)."""

FLOW_T1 = 1e7
FLOW_EPS = 1e-5


@functools.cache
def small_full_gd(eta: float = 0.5, num_steps: int = 300) -> dict[str, np.ndarray]:
    """Full-matrix GD on the exact population loss of `SMALL` (Lemma A, all binom(T, q) subsets) from
    zero init, and the reduced recursion with the same η.

    **Returns:** numpy arrays: `loss`, `W`, `V` of the full run and `loss_r`, `gamma`, `a` of the
    reduced one, at every step.
    """
    cfg = SMALL
    E, subsets = sts.onehot_pe(cfg.T), sts.all_subsets(cfg.T, cfg.q)

    def loss(m):
        return sts.exact_population_loss(m, E, subsets)

    full = dynamics.train(
        loss,
        sts.zero_init(cfg),
        dynamics.gd(eta),
        num_steps=num_steps,
        save=dynamics.Save(fn=lambda step, m, args: (loss(m), m)),
    )
    red = sts.reduced_gd(cfg, eta, num_steps)
    L, models = full.values
    return {
        "loss": np.asarray(L),
        "W": np.asarray(models.W),
        "V": np.asarray(models.V),
        "loss_r": np.asarray(red.values["loss"]),
        "gamma": np.asarray(red.values["gamma"]),
        "a": np.asarray(red.values["a"]),
    }


@functools.cache
def paper_flow(eps: float | None = None) -> dict[str, np.ndarray]:
    """The reduced gradient flow of `PAPER_SIZE` up to t = 1e7 (log-spaced saves), optionally with
    the event L <= eps.

    **Returns:** `ts`, `loss`, `gamma`, `a`, and `stop`, `t_stop`.
    """
    ts = np.logspace(0, np.log10(FLOW_T1), 141)
    run = sts.reduced_flow(PAPER_SIZE, FLOW_T1, ts, eps=eps)
    out = {k: np.asarray(v) for k, v in run.values.items()}
    return out | {"ts": ts, "stop": int(run.stop), "t_stop": float(run.t_stop)}


def ood_along_flow(T_new: int, q_new: int) -> np.ndarray:
    """L_{T',q'}(γ(t), a(t)) along [`paper_flow`][] (Theorem 3's closed form)."""
    flow = paper_flow()
    fn = sts.reduced_state_loss(PAPER_SIZE, T=T_new, q=q_new)
    return np.asarray(jax.vmap(fn)({"gamma": jnp.asarray(flow["gamma"]), "a": jnp.asarray(flow["a"])}))


SPHERE_TASK = sts.STSConfig(d=10, T=200, q=3, pe_sampler="iid_sphere", pe_dim=64)
"""The `iid_sphere` instance of the floor checks (T = 200, q = 3, m_E = 64, ρ = 1; d = 10 (recon))."""


@functools.cache
def sphere_bank(T: int, q: int, m_E: int, size: int, seed: int = 0) -> tuple[jax.Array, dict[str, float]]:
    """A bank of `size` iid_sphere score vectors at (T, q, m_E) and its floor.

    **Returns:** `(scores, floor)`, floor = `{"ratio", "alpha", "gamma"}` of [`sts.sphere_floor`][].
    """
    cfg = SPHERE_TASK.replace(T=T, q=q, pe_dim=m_E)
    scores = sts.sphere_scores(cfg, jax.random.PRNGKey(seed), size, chunk=min(size, 100))
    return scores, sts.sphere_floor(scores, q)
