"""The four Scan and Snap simulation levels, each one run (one seed) returning a `dynamics.Run`.

- **L0** [`sgd_run`][]: finite-T mini-batch SGD / heavy-ball momentum / Adam on sampled
  sequences, the official code's setting.
- **L1** [`population_flow`][]: gradient flow of the population (T → ∞) loss.
- **L2** [`theory_flow`][]: the decoupled theory flow of Eqn 10 with the Eqn 9 gradient.
- **L3** [`scalar_flow`][]: the scalar phase-transition model of Theorem 4.

Every function is pure and `vmap`-able over its array arguments (keys, rates, initial models).
"""

from collections.abc import Callable

import jax.numpy as jnp
import optax
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray, PyTree

import dynamics

from ._classes import ClassArrays
from ._data import sample
from ._metrics import distinct_token_entropy
from ._model import Batch, YZModel, class_attention, cross_entropy, population_loss
from ._theory_flow import (
    ScalarArgs,
    ScalarState,
    TheoryArgs,
    TheoryState,
    scalar_vector_field,
    theory_vector_field,
)

OPTIMIZERS = ("sgd", "momentum", "adam")


def model_rates(eta_y: Float[ArrayLike, ""], eta_z: Float[ArrayLike, ""]) -> YZModel:
    """The per-group rates (η_Y for the decoder Y, η_Z for the attention Z) as a
    `dynamics.Rates` prefix of a [`YZModel`][]."""
    return YZModel(Y=eta_y, Z=eta_z)


def default_metrics(classes: ClassArrays) -> Callable[[YZModel], dict[str, Array]]:
    """What a run saves by default: the population loss, the Fig. 6 distinct-token entropy,
    and the per-class attention c_n (Eqn 5, shape (K, M))."""

    def metrics(model: YZModel) -> dict[str, Array]:
        return {
            "population_loss": population_loss(model, classes),
            "dt_entropy": distinct_token_entropy(model, classes),
            "attention": class_attention(model, classes),
        }

    return metrics


def optimizer(
    name: str, eta_y: Float[ArrayLike, ""], eta_z: Float[ArrayLike, ""], momentum: float = 0.9
) -> optax.GradientTransformation:
    """The L0 optimiser by name: `sgd` (plain), `momentum` (PyTorch heavy ball), `adam`."""
    rates = model_rates(eta_y, eta_z)
    if name == "sgd":
        return dynamics.gd(rates)
    if name == "momentum":
        return dynamics.heavy_ball(rates, momentum)
    if name == "adam":
        return dynamics.adam(rates)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")


def sgd_run(
    key: PRNGKeyArray,
    model: YZModel,
    classes: ClassArrays,
    *,
    T: int,
    batch_size: int,
    num_steps: int,
    every: int,
    eta_y: Float[ArrayLike, ""],
    eta_z: Float[ArrayLike, ""],
    log_saves: int | None = None,
    method: str = "momentum",
    momentum: float = 0.9,
    save: Callable[[YZModel], PyTree] | None = None,
    along: dynamics.Along | None = None,
) -> dynamics.Run:
    """L0: mini-batch training on fresh sampled sequences (the official code's setting).

    Loss = mean cross-entropy over a batch of `batch_size` sequences of T − 1 contextual
    tokens each; step k draws its batch from `fold_in(key, k)`.

    **Arguments:**

    - `key`: the seed's PRNG key (mini-batch stream).
    - `model`: the initial (Y, Z).
    - `classes`: the sequence classes as arrays.
    - `T`, `batch_size`, `num_steps`, `every`: sequence length, batch size, steps, save period.
    - `eta_y`, `eta_z`: learning rates of Y and Z.
    - `log_saves`: save at step 0 and at `dynamics.log_spaced_steps(num_steps, log_saves)`
      instead of every `every` steps (`None`: every).
    - `method`: `sgd`, `momentum` (heavy ball with μ = `momentum`) or `adam`.
    - `save`: function of the model to save, a dict with `along`; default [`default_metrics`][].
    - `along`: what else to record (`dynamics.Along`; `None`: nothing) of the population loss,
      the T → ∞ loss that L1 descends: the sharpness against the edge of stability of `method`
      (2/η for `sgd`, 2(1 + μ)/η for `momentum`, λ_max(P⁻¹H) against 38/η for `adam`,
      [`dynamics.AdamSteps`][]), and with `sgd` the distance from L1's flow at t = k (mini-batch
      noise, finite T and the discrete steps together).

    **Returns:** a `dynamics.Run` with `ts` = step numbers.
    """

    def draw(k: PRNGKeyArray) -> Batch:
        return sample(k, classes, batch_size, T)

    record = default_metrics(classes) if save is None else save

    def saved(step, p, args):
        return record(p)

    recorded = dynamics.training_save(saved, num_steps=num_steps, every=every, log_saves=log_saves)
    if along is not None:
        recorded = along.save(
            recorded,
            lambda m: population_loss(m, classes),
            model,
            _stable_steps(method, eta_y, eta_z, momentum),
            num_steps=num_steps,
        )
    return dynamics.train(
        cross_entropy,
        model,
        optimizer(method, eta_y, eta_z, momentum),
        num_steps=num_steps,
        key=key,
        sample=draw,
        save=recorded,
    )


def _stable_steps(method: str, eta_y, eta_z, momentum: float) -> YZModel | dynamics.AdamSteps:
    """The steps whose edge of stability is that of `method` on a quadratic: the rates for `sgd`,
    the rates over 1 + μ for heavy-ball `momentum` (stable while λη < 2(1 + μ)), Adam's
    preconditioned edge for `adam`."""
    if method == "sgd":
        return model_rates(eta_y, eta_z)
    if method == "momentum":
        return model_rates(eta_y / (1 + momentum), eta_z / (1 + momentum))
    return dynamics.AdamSteps(model_rates(eta_y, eta_z))


def population_flow(
    model: YZModel,
    classes: ClassArrays,
    *,
    eta_y: Float[ArrayLike, ""],
    eta_z: Float[ArrayLike, ""],
    t1: float,
    save_ts: Float[ArrayLike, " S"],
    save: Callable[[YZModel], PyTree] | None = None,
    **flow_options,
) -> dynamics.Run:
    """L1: gradient flow of the population loss −Σ_n π_n log α_n[n] (Lemma 1 in expectation under Lemma 2):

        Ẏ = η_Y Σ_n π_n f_n (e_n − α_n)^T,
        ż_m = η_Z Σ_{n∈ψ^{-1}(m)} π_n diag(f_n) P^⊥_{f_n} Y (e_n − α_n),

    time measured in batch-1 SGD steps.

    **Arguments:** the initial model, the classes, the two rates, the end time, the save
    times, what to save (default [`default_metrics`][]), and any `dynamics.ode_flow` option.

    **Returns:** a `dynamics.Run` whose state is the model.
    """
    metrics = default_metrics(classes) if save is None else save
    return dynamics.gradient_flow(
        lambda m: population_loss(m, classes),
        model,
        rates=model_rates(eta_y, eta_z),
        t1=t1,
        save=dynamics.Save(ts=save_ts, fn=lambda t, m, args: metrics(m)),
        **flow_options,
    )


def theory_flow(
    Z0: Float[Array, "M M"],
    classes: ClassArrays,
    *,
    eta_y: Float[ArrayLike, ""],
    eta_z: Float[ArrayLike, ""],
    t1: float,
    save_ts: Float[ArrayLike, " S"],
    class_weighted: bool = False,
    save: Callable[[TheoryState], PyTree] | None = None,
    **flow_options,
) -> dynamics.Run:
    """L2: the decoupled theory flow (Eqn 10 with the Eqn 9 gradient), state (Z, B_n).

    **Arguments:** the initial attention logits, the classes, the rates (η_Y enters only
    through γ(t)), the end time, the save times, `class_weighted` (multiply class terms by
    π_n, the weight the printed Eqn 10 omits), what to save (default: the whole state), and
    `dynamics.ode_flow` options.

    **Returns:** a `dynamics.Run` whose state is a `TheoryState`.
    """
    args = TheoryArgs(
        probs=classes.probs, query=classes.query, eta_y=eta_y, eta_z=eta_z, class_weighted=class_weighted
    )
    state = TheoryState(Z=Z0, B=jnp.zeros(classes.probs.shape[0], Z0.dtype))
    return dynamics.ode_flow(
        theory_vector_field,
        state,
        args=args,
        t1=t1,
        save=dynamics.Save(ts=save_ts, fn=None if save is None else lambda t, y, args: save(y)),
        **flow_options,
    )


def scalar_flow(
    *,
    M: float,
    K: float,
    eta_y: Float[ArrayLike, ""],
    eta_z: Float[ArrayLike, ""],
    C0: float,
    t1: float,
    save_ts: Float[ArrayLike, " S"],
    dtype=jnp.float64,
    **flow_options,
) -> dynamics.Run:
    """L3: the scalar phase-transition model of Theorem 4 (z of the single common token and
    B_n), from z(0) = B(0) = 0.

    **Returns:** a `dynamics.Run` whose state is a `ScalarState`.
    """
    args = ScalarArgs(M=M, K=K, eta_y=eta_y, eta_z=eta_z, C0=C0)
    state = ScalarState(z=jnp.zeros((), dtype), B=jnp.zeros((), dtype))
    return dynamics.ode_flow(
        scalar_vector_field, state, args=args, t1=t1, save=dynamics.Save(ts=save_ts), **flow_options
    )
