"""Fast criteria of perfect classification at `V = cP` or near it (derived: the paper states
neither)."""

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from ._task import DecisionLists, TaskArrays


def mu_table(W: Float[Array, "L L"], arrays: TaskArrays) -> Float[Array, "L M"]:
    """`μ_{a,k}(W) = W[a_k, a] − max_{b ∉ {a_1..a_k}} W[b, a]`; `+inf` past `m_a`.

    Column `a` of `W` holds the attention scores of query `a` over the keys `b`.
    """
    L, M = arrays.lists.shape
    entries = jax.nn.one_hot(arrays.lists, L, dtype=jnp.int32)  # (L, M, L)
    excluded = jnp.cumsum(entries, axis=1) > 0  # b ∈ {a_1..a_k}
    columns = W.T  # columns[a, b] = W[b, a]
    own = jnp.take_along_axis(columns, arrays.lists, axis=1)  # W[a_k, a]
    best_outside = jnp.max(jnp.where(excluded, -jnp.inf, columns[:, None, :]), axis=2)
    valid = jnp.arange(M, dtype=jnp.int32)[None, :] < arrays.lengths[:, None]
    return jnp.where(valid, own - best_outside, jnp.inf)


def mu(W: Float[Array, "L L"], arrays: TaskArrays) -> Float[Array, ""]:
    """`μ(W) = min_{a, k ≤ m_a} μ_{a,k}(W)`: with `V = cP`, `D = distinct`, `n ≥ 3` and
    `L − M ≥ n`, perfect classification ⟺ `μ(W) > 0` (derived; checked against enumeration)."""
    return jnp.min(mu_table(W, arrays))


def mu_criterion_applies(task: DecisionLists) -> bool:
    """Whether `μ(W) > 0` is equivalent to perfect classification at `V = cP`: `D = distinct`,
    `n ≥ 3` and `L − M ≥ n`."""
    return task.distribution == "distinct" and task.n >= 3 and task.L - task.M >= task.n


def certified(
    W: Float[Array, "L L"],
    V: Float[Array, "L L"],
    c: Float[Array, ""],
    P: Float[Array, "L L"],
    n: int,
    arrays: TaskArrays,
) -> Bool[Array, ""]:
    """The sufficient certificate of perfect classification for `V = cP + U` under `distinct`
    (derived): `(c/n)(1 − exp(−μ_{a,k})) > 2 ‖U‖_max` for every `(a, k)`."""
    table = mu_table(W, arrays)
    slack = 2.0 * jnp.max(jnp.abs(V - c * P))
    lhs = (c / jnp.asarray(n, W.dtype)) * (1.0 - jnp.exp(-table))
    return jnp.all(table > 0) & jnp.all(lhs > slack)
