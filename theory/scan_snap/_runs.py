"""Simulations behind the Scan and Snap checks: the task instances, one jitted runner per
simulation level (each compiles once per array shape), the reference runs that several
checks share (cached, so a paper run integrates each of them once), and the small
comparison helpers the checks share.

The shared runs return NumPy float64 arrays; the checks compare in NumPy.
"""

import functools

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray

import dynamics
import tasks.scan_snap as ss

from . import closed_forms as cf

FLOW_CONTROLLER = diffrax.PIDController(rtol=1e-10, atol=1e-12)
"""Step-size control of the L1/L2 flows (Tsit5)."""

SCALAR_CONTROLLER = diffrax.PIDController(rtol=1e-12, atol=1e-14)
"""Step-size control of the L3 scalar model (scalar states)."""

QUERY, CT = 13, 0
"""The query token shared by the three classes of the reference instance, and its common token."""

DT_WEIGHTS = np.array([0.1, 0.15, 0.3, 0.45])
"""Relative probabilities of the four distinct tokens of a class in the reference instance."""

NUM_SAVES = 241
"""Save times of every L1/L2 run and of the h ODE (one compiled shape per runner)."""


def dt_block(n: int) -> np.ndarray:
    """G_DT(n) of the reference instance: tokens 1 + 4n, ..., 4 + 4n, in increasing probability."""
    return np.arange(1 + 4 * n, 5 + 4 * n)


def reference_classes(class_probs=None) -> ss.SequenceClasses:
    """The reference instance of the checks: K = 3 classes sharing query token 13, one common
    token (0, P = 0.1) and four distinct tokens per class with P ∝ (0.1, 0.15, 0.3, 0.45)
    summing to 0.9; next tokens 14, 15, 16; M = 17.

    **Arguments:**

    - `class_probs`: π over the classes; `None` is uniform.

    **Returns:** the [`tasks.scan_snap.SequenceClasses`][].
    """
    K, M = 3, 17
    probs = np.zeros((K, M))
    probs[:, CT] = 0.1
    for n in range(K):
        probs[n, dt_block(n)] = 0.9 * DT_WEIGHTS / DT_WEIGHTS.sum()
    return ss.SequenceClasses(probs, np.full(K, QUERY), np.arange(14, 17), class_probs=class_probs)


def outside(values, lo: float, hi: float) -> float:
    """How far `values` reach outside [lo, hi]; 0 when they all lie inside."""
    values = np.asarray(values)
    return float(max(lo - values.min(), values.max() - hi, 0.0))


def log_log_slope(x, y) -> float:
    """Least-squares slope of log y against log x (a fitted power-law exponent)."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def log_grid(first: float, last: float, num: int) -> Float[Array, " num"]:
    """`0` followed by `num − 1` log-spaced times from `first` to exactly `last`."""
    grid = np.concatenate([[0.0], np.logspace(np.log10(first), np.log10(last), num - 1)])
    grid[-1] = last
    return jnp.asarray(grid)


def f64(x) -> Array:
    """`x` as a float64 JAX array (a traced argument, so a new value does not recompile)."""
    return jnp.asarray(x, jnp.float64)


# --------------------------------------------------------------------------------------
# Runners, one compile each
# --------------------------------------------------------------------------------------


@eqx.filter_jit
def population_run(model: ss.YZModel, arrays: ss.ClassArrays, eta_y, eta_z, save_ts) -> dynamics.Run:
    """L1: the population gradient flow from `model`, saving the whole model at `save_ts`."""
    return ss.population_flow(
        model,
        arrays,
        eta_y=eta_y,
        eta_z=eta_z,
        t1=save_ts[-1],
        save_ts=save_ts,
        save=lambda m: m,
        stepsize_controller=FLOW_CONTROLLER,
    )


@eqx.filter_jit
def theory_run(arrays: ss.ClassArrays, eta_y, eta_z, save_ts) -> dynamics.Run:
    """L2: the decoupled theory flow from Z = 0, class-weighted (π_n = 1/K, the expectation
    over uniformly sampled classes, as in L1), saving the state (Z, B_n)."""
    M = arrays.probs.shape[1]
    return ss.theory_flow(
        jnp.zeros((M, M), jnp.float64),
        arrays,
        eta_y=eta_y,
        eta_z=eta_z,
        t1=save_ts[-1],
        save_ts=save_ts,
        class_weighted=True,
        stepsize_controller=FLOW_CONTROLLER,
    )


@jax.jit
def theory_z_dot(ts, states: ss.TheoryState, arrays: ss.ClassArrays, eta_y, eta_z) -> Float[Array, "S M"]:
    """ż of the query row along saved L2 states (Eqn 10, class-weighted)."""
    args = ss.TheoryArgs(
        probs=arrays.probs, query=arrays.query, eta_y=eta_y, eta_z=eta_z, class_weighted=True
    )
    return jax.vmap(ss.theory_vector_field, in_axes=(0, 0, None))(ts, states, args).Z[:, QUERY]


@jax.jit
def scalar_run(M, K, eta_y, eta_z, C0, save_ts) -> dynamics.Run:
    """L3: the scalar model of Theorem 4 from z = B = 0, saving (z, B) at `save_ts`."""
    return ss.scalar_flow(
        M=M,
        K=K,
        eta_y=eta_y,
        eta_z=eta_z,
        C0=C0,
        t1=save_ts[-1],
        save_ts=save_ts,
        stepsize_controller=SCALAR_CONTROLLER,
    )


def _h_field(t, h, args):
    M, eta_y = args
    return eta_y / ((M - 1) + jnp.exp(M * h))


@jax.jit
def h_run(M, eta_y, save_ts) -> dynamics.Run:
    """Eqn 44, dh/dt = η_Y / ((M − 1) + e^{Mh}), h(0) = 0, by Tsit5 with rtol = 1e-10 and
    atol = 1e-14. (h is 1e-8 to 1e-3 here: with atol = 1e-10 the integration error
    alone reaches 2e-7 relative in the transition e^{Mh} ≈ M − 1, and 4e-7 for M = 1e4.)"""
    return dynamics.ode_flow(
        _h_field,
        jnp.zeros((), jnp.float64),
        args=(M, eta_y),
        t1=save_ts[-1],
        save=dynamics.Save(ts=save_ts),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-14),
    )


@jax.jit
def decoder_run(F, next_token, eta_y, save_ts) -> Float[Array, "S M K"]:
    """Theorem 1 setting: Z frozen (so F is fixed), Y(0) = 0, the expected modified decoder
    update of Eqn 26 with uniform classes,

        Ẏ = η_Y Σ_n (1/K) (f_n − F E' e_n)(e_n − α_n)^T,    α_n = softmax(Y^T f_n),

    integrated by Tsit5; saves the back-propagated gradients g_n = Y (e_n − α_n) as the
    columns of an (M, K) matrix."""
    M, K = F.shape
    E = F.T @ F - jnp.eye(K, dtype=F.dtype)
    directions = F - F @ ss.e_prime(E)
    targets = jax.nn.one_hot(next_token, M, dtype=F.dtype)

    def errors(Y):
        return targets - jax.nn.softmax(F.T @ Y, axis=1)

    def field(t, Y, args):
        return eta_y / K * directions @ errors(Y)

    run = dynamics.ode_flow(
        field,
        jnp.zeros((M, M), F.dtype),
        t1=save_ts[-1],
        save=dynamics.Save(ts=save_ts, fn=lambda t, Y, args: Y @ errors(Y).T),
        stepsize_controller=diffrax.PIDController(rtol=1e-11, atol=1e-12),
    )
    return run.values


@eqx.filter_jit
def lemma5_discrete_run(
    model: ss.YZModel, arrays: ss.ClassArrays, eta_y, num_steps: int
) -> Float[Array, "S M"]:
    """Plain GD on the single-class population loss with Z frozen (rate 0) from `model`
    (Y = 0): one step is one batch-1 SGD step of Lemma 5. Saves w_n = f_n^T Y every step."""

    def save(m):
        c = ss.class_attention(m, arrays)[0]
        return (c / jnp.linalg.norm(c)) @ m.Y

    run = dynamics.train(
        lambda m: ss.population_loss(m, arrays),
        model,
        ss.optimizer("sgd", eta_y, jnp.zeros((), jnp.float64)),
        num_steps=num_steps,
        save=dynamics.Save(fn=lambda step, p, args: save(p)),
    )
    return run.values


@eqx.filter_jit
def sgd_row_sums(key: PRNGKeyArray, arrays: ss.ClassArrays, T: int, num_steps: int, eta) -> dynamics.Run:
    """L0 with batch 1 and plain SGD from Y = Z = 0 (Lemma 1's setting); saves the largest
    |row sum| of Y and of Z every `num_steps // 10` steps."""
    M = arrays.probs.shape[1]
    return ss.sgd_run(
        key,
        ss.YZModel.zeros(M, jnp.float64),
        arrays,
        T=T,
        batch_size=1,
        num_steps=num_steps,
        every=num_steps // 10,
        eta_y=eta,
        eta_z=eta,
        method="sgd",
        save=lambda m: jnp.maximum(jnp.max(jnp.abs(m.Y.sum(axis=1))), jnp.max(jnp.abs(m.Z.sum(axis=1)))),
    )


@eqx.filter_jit
def prefix_counts(keys: PRNGKeyArray, arrays: ss.ClassArrays, T_max: int, lengths) -> tuple[Array, Array]:
    """One sequence of T_max − 1 contextual tokens per key (`tasks.scan_snap.sample_tokens`),
    and the token counts N of its first `lengths[i]` positions.

    **Returns:** `(counts, label)`: counts of shape (draws, len(lengths), M), and each
    sequence's next token (which identifies its class).
    """
    M = arrays.probs.shape[1]
    positions = jnp.arange(T_max - 1)
    bucket = jnp.searchsorted(lengths, positions, side="right")  # the first prefix holding a position

    def one(key):
        batch = ss.sample_tokens(key, arrays, 1, T_max)
        per_bucket = jnp.zeros((len(lengths) + 1, M), jnp.float64).at[bucket, batch.tokens[0]].add(1.0)
        return jnp.cumsum(per_bucket, axis=0)[:-1], batch.label[0]

    return jax.lax.map(one, keys)


# --------------------------------------------------------------------------------------
# Shared reference runs
# --------------------------------------------------------------------------------------


REFERENCE_T1 = 2000.0
"""End of the reference L1/L2 runs (the Eqn 11 reference values are at t = 2000)."""


@functools.cache
def reference_l1(eta_z: float) -> tuple[np.ndarray, ss.YZModel]:
    """L1 on the reference instance, η_Y = 1, Y = Z = 0, t ∈ [0, 2000].

    **Returns:** `(ts, models)`, the models stacked over the save times (NumPy leaves).
    """
    ts = log_grid(1e-2, REFERENCE_T1, NUM_SAVES)
    run = population_run(
        ss.YZModel.zeros(17, jnp.float64), reference_classes().arrays(), f64(1.0), f64(eta_z), ts
    )
    return np.asarray(ts), jax.tree.map(np.asarray, run.values)


@functools.cache
def reference_l2(eta_y: float, eta_z: float) -> tuple[np.ndarray, ss.TheoryState, np.ndarray]:
    """L2 (class-weighted) on the reference instance from Z = 0, t ∈ [0, 2000].

    **Returns:** `(ts, states, z_dot)`: the saved states (Z, B_n) and ż of the query row.
    """
    arrays = reference_classes().arrays()
    ts = log_grid(1e-2, REFERENCE_T1, NUM_SAVES)
    run = theory_run(arrays, f64(eta_y), f64(eta_z), ts)
    z_dot = theory_z_dot(ts, run.values, arrays, f64(eta_y), f64(eta_z))
    return np.asarray(ts), jax.tree.map(np.asarray, run.values), np.asarray(z_dot)


def features(Z: np.ndarray) -> np.ndarray:
    """f_n of the reference instance along saved Z (time, M, M): shape (time, M, K)."""
    arrays = reference_classes().arrays()
    return np.asarray(
        jax.vmap(ss.normalized_attention_features, in_axes=(0, None, None))(
            jnp.asarray(Z), arrays.probs, arrays.query
        )
    )


def eqn11_errors(f: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Relative error of Eqn 11, |r(t) − r(0) χ_l(t)| / |r(0) χ_l(t)|, for every ordered pair
    (l, l') of distinct tokens of each class of the reference instance.

    **Arguments:**

    - `f`: f_n along the run, shape (time, M, K).
    - `z`: the query row of Z along the run, shape (time, M).

    **Returns:** shape (K, 4, 4, time), indexed (class, l, l', time); zero on the diagonal.
    """
    K = f.shape[-1]
    errors = np.zeros((K, 4, 4, f.shape[0]))
    for n in range(K):
        block = dt_block(n)
        f2 = f[:, block, n] ** 2
        chi = cf.growth_factor(z[:, block], z[0, block])
        for a in range(4):
            for b in range(4):
                if a != b:
                    r = f2[:, a] / f2[:, b] - 1
                    errors[n, a, b] = np.abs(r - r[0] * chi[:, a]) / np.abs(r[0] * chi[:, a])
    return errors
