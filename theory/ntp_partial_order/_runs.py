"""The simulations behind the checks of Huang, Liang and Yang (NeurIPS 2024): Algorithm 1 on the
Figure-2 dataset (Recipe B seed 0, |V| = 20) and on SVOP, cached, and the cosines measured on
them; everything float64."""

import dataclasses
import functools
import itertools

import jax
import numpy as np

import tasks.ntp_partial_order as ntp

from .closed_forms import MaxMargin, w_kq_star_qp, w_ov_star_closed

STEPS = 900
"""The paper's iteration count per stage (Section 7)."""
LONG_STEPS = 5000
"""Stage-2 steps of the rate checks of Theorems 1 and 2 (recon: the rates show only beyond 900 steps)."""
VERY_LONG_STEPS = 100_000
"""Stage-2 steps of the run that follows Theorem 1's direction far into saturation (recon)."""
VERY_LONG_EVERY = 100
"""Its save period."""


@dataclasses.dataclass(frozen=True)
class Simulated:
    """Algorithm 1 on one dataset, every step saved (numpy, token coordinates).

    **Fields:** `dataset`; `eta0`, `eta`; `W_ov` `(T+1, V, V)` and `W_kq` `(T2+1, V, V)` at every
    step; `L0` (stage-1 loss) and `L` (stage-2 loss) at every step; `attention` `(T2+1, N, L)`;
    `star_kq` the QP solution of Eqn 3; `star_ov` Eqn 2's closed form.
    """

    dataset: ntp.Dataset
    eta0: float
    eta: float
    W_ov: np.ndarray
    W_kq: np.ndarray
    L0: np.ndarray
    L: np.ndarray
    attention: np.ndarray
    star_kq: MaxMargin
    star_ov: np.ndarray


def simulate(
    dataset: ntp.Dataset, num_steps2: int = STEPS, eta0: float | None = None, eta: float | None = None
) -> Simulated:
    """Run Algorithm 1 (paper step sizes by default) and evaluate losses and attention per step."""
    paper0, paper = ntp.paper_step_sizes(dataset.vocab_size)
    eta0, eta = eta0 or paper0, eta or paper
    batch = ntp.make_batch(dataset)
    colloc = ntp.make_batch(dataset, collocation=True)

    @jax.jit
    def run(batch, colloc):
        first, second = ntp.algorithm1(
            batch, colloc, eta0=eta0, eta=eta, num_steps1=STEPS, num_steps2=num_steps2
        )
        L0 = jax.vmap(lambda m: ntp.loss(m, colloc))(first.values)
        L = jax.vmap(lambda m: ntp.loss(m, batch))(second.values)
        att = jax.vmap(lambda m: ntp.attention(m, batch))(second.values)
        return first.values.W_ov, second.values.W_kq, L0, L, att

    W_ov, W_kq, L0, L, att = (np.asarray(a) for a in run(batch, colloc))
    return Simulated(
        dataset, eta0, eta, W_ov, W_kq, L0, L, att, w_kq_star_qp(dataset), w_ov_star_closed(dataset)
    )


@functools.cache
def figure_dataset() -> ntp.Dataset:
    """The Figure-2 dataset: Recipe B (defaults) seed 0."""
    return ntp.RecipeB().build(0)


@functools.cache
def figure_run(num_steps2: int = STEPS) -> Simulated:
    """Algorithm 1 on [`figure_dataset`][] with the paper's step sizes."""
    return simulate(figure_dataset(), num_steps2)


@dataclasses.dataclass(frozen=True)
class LongRun:
    """Stage 2 of Algorithm 1 on the Figure-2 dataset run [`VERY_LONG_STEPS`][] steps, saved every
    [`VERY_LONG_EVERY`][] (numpy).

    **Fields:** `steps` the saved stage-2 steps; `W_kq` `(S, V, V)`; `min_attention` the smallest
    attention weight over the dataset's real positions, per save; `star_kq` the QP solution of
    Eqn 3.
    """

    steps: np.ndarray
    W_kq: np.ndarray
    min_attention: np.ndarray
    star_kq: MaxMargin


@functools.cache
def very_long_run() -> LongRun:
    """Algorithm 1 on [`figure_dataset`][] with the paper's step sizes, stage 2 continued to
    [`VERY_LONG_STEPS`][] steps; the attention weights fall to about 1e-110 there, so its gradient
    needs [`tasks.ntp_partial_order.attend`][]'s form."""
    dataset = figure_dataset()
    eta0, eta = ntp.paper_step_sizes(dataset.vocab_size)
    batch = ntp.make_batch(dataset)
    colloc = ntp.make_batch(dataset, collocation=True)

    def save(model):
        weights = jax.numpy.where(batch.mask, ntp.attention(model, batch), 1.0)
        return {"W_kq": model.W_kq, "min_attention": weights.min()}

    @jax.jit
    def run(batch, colloc):
        _, second = ntp.algorithm1(
            batch,
            colloc,
            eta0=eta0,
            eta=eta,
            num_steps1=STEPS,
            num_steps2=VERY_LONG_STEPS,
            every=VERY_LONG_EVERY,
            save=save,
        )
        return second.ts, second.values

    steps, values = run(batch, colloc)
    return LongRun(
        np.asarray(steps),
        np.asarray(values["W_kq"]),
        np.asarray(values["min_attention"]),
        w_kq_star_qp(dataset),
    )


@functools.cache
def svop_run() -> Simulated:
    """Example 2: Algorithm 1 on SVOP, `η_0 = 0.2/√4`, `η = 0.05/√4`, 900 + 900 steps."""
    return simulate(ntp.svop())


def svop_predictions() -> dict[str, str]:
    """Argmax next token of the SVOP-trained model ([`svop_run`][]) for every 2- and 3-token
    sentence, by the sentence's token names (e.g. `"OSP"`)."""
    sim = svop_run()
    d = sim.dataset
    E = ntp.make_batch(d).embeddings
    model = ntp.NTPModel(sim.W_ov[-1], sim.W_kq[-1])
    out = {}
    for L in (2, 3):
        for s in itertools.product(range(4), repeat=L):
            out["".join(map(d.name, s))] = d.name(int(np.argmax(np.asarray(ntp.predict(model, s, E)))))
    return out


def cosine(A: np.ndarray, B: np.ndarray) -> float:
    """`⟨A, B⟩ / (‖A‖ ‖B‖)` (Frobenius)."""
    return float(np.sum(A * B) / (np.linalg.norm(A) * np.linalg.norm(B)))


def cosines(Ws: np.ndarray, star: np.ndarray) -> np.ndarray:
    """`cos(W^(t), W*)` for each `t` (0 where `W^(t) = 0`)."""
    norms = np.linalg.norm(Ws, axis=(1, 2)) * np.linalg.norm(star)
    dots = np.einsum("tij,ij->t", Ws, star)
    return np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)
