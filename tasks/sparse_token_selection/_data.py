"""The STS_q distribution $D_{T,q}$ (Definition 1): Gaussian tokens, a uniform q-subset, the PE of each
example and the token part of the query (the query z_q = [x_query; s_y] is recon)."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._config import STSConfig
from ._pe import SlotPE, sample_pe, sample_slots


class Batch(NamedTuple):
    """A batch of STS_q examples.

    **Fields:**

    - `X`: tokens, shape `(B, d, T)`, i.i.d. N(0, 1) entries.
    - `y`: the subset indicator 1_y, shape `(B, T)`, exactly q ones.
    - `E`: the PE matrices, shape `(B, m_E, T)`, or a [`SlotPE`][] with slots of shape `(B, T)`.
    - `x_query`: the token part of the query, shape `(B, d)`.
    """

    X: Float[Array, "B d T"]
    y: Float[Array, "B T"]
    E: Float[Array, "B m T"] | SlotPE
    x_query: Float[Array, "B d"]


def random_subset(key: PRNGKeyArray, T: int, q, *, dtype=jnp.float64) -> Float[Array, " T"]:
    """1_y for y ∼ Uniform(binom([T], q)): the positions of the q smallest of T uniforms (ties to the
    lower position). `q` may be a traced integer (vmap over q_test); a Python `int` takes the same
    positions by `top_k`, without sorting."""
    u = jax.random.uniform(key, (T,))
    if isinstance(q, int):
        return jnp.zeros((T,), dtype).at[jax.lax.top_k(-u, q)[1]].set(1)
    ranks = jnp.argsort(jnp.argsort(u))
    return (ranks < q).astype(dtype)


def target(X: Float[Array, "d T"], y: Float[Array, " T"]) -> Float[Array, " d"]:
    r"""$\mathrm{STS}_q(X, y) = (1/q) \sum_{i \in y} x_i = X u_y$ (Definition 1)."""
    return X @ (y / jnp.sum(y))


def sample(
    config: STSConfig,
    key: PRNGKeyArray,
    batch_size: int,
    *,
    T: int | None = None,
    q=None,
    slots: bool = False,
    dtype=jnp.float64,
) -> Batch:
    """`batch_size` examples of $D_{T,q}$ with their PE (fresh per example for stochastic PE).

    **Arguments:**

    - `config`: the task.
    - `key`: PRNG key.
    - `batch_size`: B.
    - `T`, `q`: evaluation length and sparsity (default `config.T`, `config.q`); `q` may be traced.
    - `slots`: return the PE as a [`SlotPE`][] (the same draws; one-hot families only), which the
      transformer reads in O(T) instead of O(m_E T) per example.
    - `dtype`: floating dtype.

    **Returns:** a [`Batch`][].
    """
    T = config.T if T is None else T
    q = config.q if q is None else q
    kx, ky, ke, kq = jax.random.split(key, 4)
    X = jax.random.normal(kx, (batch_size, config.d, T), dtype)
    y = jax.vmap(lambda k: random_subset(k, T, q, dtype=dtype))(jax.random.split(ky, batch_size))
    if slots:
        E = jax.vmap(lambda k: sample_slots(config, k, T))(jax.random.split(ke, batch_size))
    else:
        E = jax.vmap(lambda k: sample_pe(config, k, T, dtype=dtype))(jax.random.split(ke, batch_size))
    if config.x_query_mode == "zeros":
        x_query = jnp.zeros((batch_size, config.d), dtype)
    else:
        x_query = jax.random.normal(kq, (batch_size, config.d), dtype)
    return Batch(X, y, E, x_query)


def antithetic(batch: Batch) -> Batch:
    """The batch followed by its mirror (X, x_query) → (−X, −x_query) with the same y and PE
    (odd Gaussian moments then cancel exactly in the Monte-Carlo average)."""
    return Batch(
        jnp.concatenate([batch.X, -batch.X]),
        jnp.concatenate([batch.y, batch.y]),
        jax.tree.map(lambda e: jnp.concatenate([e, e]), batch.E),
        jnp.concatenate([batch.x_query, -batch.x_query]),
    )
