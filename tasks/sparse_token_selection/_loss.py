"""Losses: the sample loss (its ½ normalisation, summed over the d outputs, is recon), the Gaussian
closed form of Lemma A, the exact population loss (subsets enumerated) and Monte-Carlo estimates
with antithetic pairs."""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray

from ._config import STSConfig
from ._data import Batch, antithetic, sample, target
from ._model import STSTransformer


def example_loss(model, X, y, E, x_query) -> Float[Array, ""]:
    """½ ‖f(X, y, E) − STS_q(X, y)‖² for one example."""
    r = model(X, y, E, x_query) - target(X, y)
    return 0.5 * jnp.sum(r * r)


def loss(model, batch: Batch) -> Float[Array, ""]:
    """The empirical loss on a batch: ½ mean ‖f − STS_q‖²."""
    return jnp.mean(jax.vmap(example_loss, in_axes=(None, 0, 0, 0, 0))(model, *batch))


def _require_x_independent(model: STSTransformer) -> None:
    """Lemma A needs an attention that does not depend on X: W_XE = 0 (and x_query = 0)."""
    if isinstance(model.W, jax.core.Tracer):
        return
    if np.any(np.asarray(model.W[: model.d, model.d :]) != 0):
        raise ValueError(
            "the closed form of Lemma A needs W_XE = 0 (an X-independent attention); use mc_loss instead"
        )


def lemma_a_loss(model: STSTransformer, E: Float[Array, "m T"], y: Float[Array, " T"]) -> Float[Array, ""]:
    """Lemma A (derived): the loss for one (E, y), exact in X, when x_query = 0 and W_XE = 0.

    `½ [ ||V_X||_F² ||p||² − 2 tr(V_X) (p·u) + d ||u||² + ||V_E E p||² ]`, u = 1_y / q, with p the
    attention on the token keys (and the query key's weight in the value term for
    `keys = tokens_and_query`). Not differentiable in W_XE (its true gradient there is 0 by symmetry).
    """
    d, T = model.d, E.shape[1]
    x0 = jnp.zeros((d, T), E.dtype)
    scores, z_q = model.scores(x0, y, E, jnp.zeros((d,), E.dtype))
    p = jax.nn.softmax(scores)
    p_tok = p[:T]
    u = y / jnp.sum(y)
    V_X, V_E = model.V[:, :d], model.V[:, d:]
    pe_value = V_E @ model.read(x0, E, z_q, p)[d:]
    d_arr = jnp.asarray(d, E.dtype)
    return 0.5 * (
        jnp.sum(V_X * V_X) * jnp.sum(p_tok * p_tok)
        - 2.0 * jnp.trace(V_X) * jnp.dot(p_tok, u)
        + d_arr * jnp.sum(u * u)
        + jnp.sum(pe_value * pe_value)
    )


def all_subsets(T: int, q: int, *, dtype=jnp.float64) -> Float[Array, "S T"]:
    """The indicators of all binom(T, q) subsets (T ≤ 16)."""
    if T > 16:
        raise ValueError(f"enumerating subsets needs T <= 16, got T={T}")
    rows = np.zeros((len(list(itertools.combinations(range(T), q))), T))
    for s, subset in enumerate(itertools.combinations(range(T), q)):
        rows[s, list(subset)] = 1.0
    return jnp.asarray(rows, dtype)


def exact_population_loss(
    model: STSTransformer, E: Float[Array, "m T"], subsets: Float[Array, "S T"]
) -> Float[Array, ""]:
    """The population loss for a deterministic PE `E`: Lemma A averaged over the given subsets
    (all of them, [`all_subsets`][], for the exact value)."""
    _require_x_independent(model)
    return jnp.mean(jax.vmap(lambda y: lemma_a_loss(model, E, y))(subsets))


def bank_population_loss(
    model: STSTransformer, E_bank: Float[Array, "B m T"], y_bank: Float[Array, "B T"]
) -> Float[Array, ""]:
    """The population loss for stochastic PE with common random numbers: Lemma A
    (exact in X) averaged over a fixed bank of (E, y) draws."""
    _require_x_independent(model)
    return jnp.mean(jax.vmap(lambda E, y: lemma_a_loss(model, E, y))(E_bank, y_bank))


def pe_bank(
    config: STSConfig, key: PRNGKeyArray, size: int, *, T: int | None = None, q=None, dtype=jnp.float64
) -> tuple[Float[Array, "B m T"], Float[Array, "B T"]]:
    """A bank of `size` (E, 1_y) draws for [`bank_population_loss`][]."""
    batch = sample(config.replace(d=1), key, size, T=T, q=q, dtype=dtype)
    return batch.E, batch.y


def mc_loss(
    model,
    config: STSConfig,
    key: PRNGKeyArray,
    num_pairs: int,
    *,
    T: int | None = None,
    q=None,
    chunk: int = 512,
    slots: bool = False,
    dtype=jnp.float64,
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Monte-Carlo population loss with antithetic pairs (X, −X).

    **Arguments:**

    - `model`: any model `(X, y, E, x_query) -> (d,)`.
    - `config`: the task (PE law, x_query mode).
    - `key`: PRNG key.
    - `num_pairs`: antithetic pairs drawn (a multiple of `chunk`, or smaller than it).
    - `T`, `q`: evaluation length and sparsity (default the training ones); `q` may be traced.
    - `chunk`: pairs per vectorised block (bounds memory).
    - `slots`: draw the PE as a [`SlotPE`][] (the same draws, one-hot families only; see
      [`sample`][]).

    **Returns:** `(mean, standard error)`, the error from the spread of the pair averages.
    """
    chunk = min(chunk, num_pairs)
    if num_pairs % chunk:
        raise ValueError(f"num_pairs must be a multiple of chunk={chunk}, got {num_pairs}")
    # The model's arrays pass a barrier: under an outer `jax.jit` a constant model (a zero init)
    # made XLA's CPU backend compute the chunked average wrongly, differently from process to
    # process.
    arrays, rest = eqx.partition(model, eqx.is_array)
    model = eqx.combine(jax.lax.optimization_barrier(arrays), rest)

    def block(k):
        batch = antithetic(sample(config, k, chunk, T=T, q=q, slots=slots, dtype=dtype))
        per = jax.vmap(example_loss, in_axes=(None, 0, 0, 0, 0))(model, *batch)
        return 0.5 * (per[:chunk] + per[chunk:])

    pairs = jax.lax.map(block, jax.random.split(key, num_pairs // chunk)).reshape(-1)
    n = jnp.asarray(num_pairs, dtype)
    return jnp.mean(pairs), jnp.std(pairs) / jnp.sqrt(n - 1.0)
