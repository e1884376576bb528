"""Online training on fresh samples: mini-batch GD or Adam on the practical model, with the
validation loss at the training length, at longer lengths T_test and at other subset sizes q_test,
and the direction cosines of Fig. 1, saved along the run."""

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

import dynamics

from ._config import STSConfig
from ._data import sample
from ._loss import loss, mc_loss
from ._model import definition4_part, direction_cosines, random_init, zero_init
from ._pe import ONEHOT_FAMILIES

OPTIMIZERS = ("gd", "adam")
"""Mini-batch GD (Figs. 1, 2, 4) or Adam with β = (0.9, 0.999) (Figs. 3, 5)."""

INITS = ("zeros", "random")
"""Zero init (Theorem 1's) or N(0, σ_0²) entries (the practical model's)."""

BLOCKS = ("all", "definition4")
"""The trained blocks: all of W and V (the figures' model) or only W_EE and V_X (Definition 4's
reparameterised model, on which the theory's invariant set lies; see [`definition4_part`][])."""


def validation_lengths(task: STSConfig, num: int) -> tuple[int, ...]:
    """`num` test lengths evenly spaced up to the longest the PE serves, L:
    `T + k (L − T) // num` for k = 1..num (T = 200, L = 400, num = 4: 250, 300, 350, 400)."""
    span = task.lengths_served - task.T
    return tuple(task.T + k * span // num for k in range(1, num + 1))


def validation_sparsities(task: STSConfig, num: int) -> tuple[int, ...]:
    """`num` unseen subset sizes above the training q: q + 1, ..., q + num."""
    return tuple(range(task.q + 1, task.q + num + 1))


def _check_tests(task: STSConfig, T_tests: tuple[int, ...], q_tests: tuple[int, ...]) -> None:
    for T_test in T_tests:
        if not task.T <= T_test <= task.lengths_served:
            raise ValueError(f"T_tests entries must be in [T, {task.lengths_served}], got {T_test}")
    for q_test in q_tests:
        if not 1 <= q_test < task.T:
            raise ValueError(f"q_tests entries must be in [1, T), got {q_test}")


def online_run(
    task: STSConfig,
    key: jax.Array,
    *,
    optimizer: str = "gd",
    lr=1.0,
    batch_size: int = 256,
    num_steps: int = 2000,
    every: int = 100,
    log_saves: int | None = None,
    init: str = "zeros",
    blocks: str = "all",
    T_tests: tuple[int, ...] = (),
    q_tests: tuple[int, ...] = (),
    num_eval: int = 1024,
    dtype=jnp.float32,
    along: dynamics.Along | None = None,
) -> dynamics.Run:
    """One online run: `num_steps` steps of `optimizer` on `batch_size` fresh examples each.

    **Arguments:**

    - `task`: the STS_q instance and PE (stochastic or `fixed_pe`).
    - `key`: split into the init, the training batches and the fixed validation draws.
    - `optimizer`: one of [`OPTIMIZERS`][]; `lr` its learning rate (may be traced).
    - `batch_size`, `num_steps`, `every`: examples per step, steps, save interval (divides
      `num_steps`).
    - `log_saves`: save at step 0 and at `dynamics.log_spaced_steps(num_steps, log_saves)`
      instead of every `every` steps (`None`: every).
    - `init`: one of [`INITS`][] (σ_0 = `task.init_scale` for `random`).
    - `blocks`: one of [`BLOCKS`][]; with `definition4` the other blocks are zero throughout.
    - `T_tests`: validation lengths, each in [T, `task.lengths_served`].
    - `q_tests`: validation subset sizes at the training length, each in [1, T).
    - `num_eval`: antithetic pairs per validation point.
    - `dtype`: the floating-point type of the model and the data.
    - `along`: what else to record (`dynamics.Along`; `None`: nothing) of the validation loss
      [`validation_loss`][] (the saved `loss`), against the edge 2/lr for `gd` and Adam's
      preconditioned edge for `adam` ([`dynamics.AdamSteps`][]).

    **Returns:** a `dynamics.Run` (final state: the model) saving at steps 0, every, ... (or the
    log-spaced steps):
    `loss` (at T, q), `loss_T` (one per T_test, when any), `loss_q` (one per q_test, when any),
    `cos_W`, `cos_W_centred`, `cos_V`.

    **Raises:** `ValueError` for a T_test or q_test out of range, or an unknown `blocks`.
    """
    _check_tests(task, T_tests, q_tests)
    if blocks not in BLOCKS:
        raise ValueError(f"blocks must be one of {BLOCKS}, got {blocks!r}")
    dtype = jnp.dtype(dtype)
    k_init, k_train, k_eval = jax.random.split(key, 3)
    model = zero_init(task, dtype=dtype) if init == "zeros" else random_init(task, k_init, dtype=dtype)
    part = _trained_part(blocks)
    rule = dynamics.gd(lr) if optimizer == "gd" else dynamics.adam(lr)
    slots = task.pe_sampler in ONEHOT_FAMILIES

    def metrics(m):
        def validate(key, **at):
            return mc_loss(m, task, key, num_eval, slots=slots, dtype=dtype, **at)[0]

        out = {"loss": validate(k_eval)}
        if T_tests:
            out["loss_T"] = jnp.stack([validate(jax.random.fold_in(k_eval, T), T=T) for T in T_tests])
        if q_tests:
            q_key = jax.random.fold_in(k_eval, 7919)
            out["loss_q"] = jax.vmap(lambda q: validate(q_key, q=q))(jnp.asarray(q_tests))
        return out | direction_cosines(m, task)

    def record(step, p, args):
        return metrics(p)

    save = dynamics.training_save(record, num_steps=num_steps, every=every, log_saves=log_saves)
    start = part(model)
    if along is not None:
        validation = validation_loss(task, key, blocks=blocks, num_eval=num_eval, dtype=dtype)
        steps = lr if optimizer == "gd" else dynamics.AdamSteps(lr)
        save = along.save(save, validation, start, steps, num_steps=num_steps)
    return dynamics.train(
        lambda m, batch: loss(part(m), batch),
        start,
        rule,
        num_steps=num_steps,
        key=k_train,
        sample=lambda k: sample(task, k, batch_size, slots=slots, dtype=dtype),
        save=save,
    )


def _trained_part(blocks: str):
    return definition4_part if blocks == "definition4" else (lambda m: m)


def validation_loss(task: STSConfig, key, *, blocks: str = "all", num_eval: int = 1024, dtype=jnp.float32):
    """`model -> L̂`: the Monte-Carlo validation loss at (T, q) that [`online_run`][] saves as `loss`,
    on the fixed draws of the run's `key` (`num_eval` antithetic pairs): a smooth, deterministic
    estimate of the population loss, of the blocks that `blocks` trains. It is the loss whose
    sharpness and gradient flow `along` follows, and the online level's landscape.

    **Arguments:** `task`; `key`: the run's key (its third split draws the validation set);
    `blocks`, `num_eval`, `dtype`: as in [`online_run`][].

    **Returns:** a function of the model, traceable (it draws the validation set when called).
    """
    part = _trained_part(blocks)
    slots = task.pe_sampler in ONEHOT_FAMILIES

    def validation(model) -> Float[Array, ""]:
        _, _, k_eval = jax.random.split(key, 3)  # traced only where the loss is used
        return mc_loss(part(model), task, k_eval, num_eval, slots=slots, dtype=jnp.dtype(dtype))[0]

    return validation
