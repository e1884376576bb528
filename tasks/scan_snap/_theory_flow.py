"""Vector fields of the Scan and Snap theory flows (simulation levels L2 and L3).

* **L2, decoupled theory flow** (Theorem 1, Lemma 4): only the attention logits `Z` move, by
  Eqn 10, with the decoder replaced by its closed form: the back-propagated gradient of
  Theorem 1 in its deterministic form `g_n(t) = γ(t) F (I - E') Q e_n` (Eqn 9 with
  `σ = θ = 0`), `F` taken from the current `Z` and `γ` from the exact `h` of Lemma 6.
  The state carries `B_n(t) = η_Z ∫ ξ_n` alongside, the exponent of the growth-factor
  bounds of Eqn 12.
* **L3, scalar phase-transition model** (Theorem 4, Appendix F): the logit `z` of the single
  common token and `B_n`, whose closed form is `phase_B_exact` (`_decoder`).

Both are pure functions with the Diffrax signature `vector_field(t, state, args)`.
They compute in the dtype of the state; the scalars in `args` are cast to it.
"""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from ._decoder import e_prime, q_matrix, speed_gamma


class TheoryState(eqx.Module):
    """State of the L2 flow.

    **Fields:**

    - `Z`: attention logits, shape `(M, M)` (row = query token, column = key token).
    - `B`: `B_n(t) = η_Z ∫_0^t π_n ξ_n` for each class, shape `(K,)` (Eqn 12; `π_n = 1`
      unless `TheoryArgs.class_weighted`).
    """

    Z: Float[Array, "M M"]
    B: Float[Array, " K"]


class TheoryArgs(eqx.Module):
    """Arguments of the L2 flow: the sequence classes and the two learning rates.

    `M` and `K` are read from the shape of `probs`.

    **Fields:**

    - `probs`: `P(l|n)`, shape `(K, M)`, rows summing to 1 (Sec. 3.2).
    - `query`: `ψ(n)`, the query token of each class, shape `(K,)`, integer.
    - `eta_y`: decoder learning rate `η_Y` (sets `γ(t)`).
    - `eta_z`: attention learning rate `η_Z`.
    - `class_weighted`: static flag; when `True` every class term of `ż` and `Ḃ` is
      multiplied by its probability `π_n = 1/K`, the expectation over uniformly sampled
      classes, a weight the printed Eqn 10 omits (derived); `False` is the paper's Eqn 10.
    """

    probs: Float[Array, "K M"]
    query: Int[Array, " K"]
    eta_y: Float[ArrayLike, ""]
    eta_z: Float[ArrayLike, ""]
    class_weighted: bool = eqx.field(static=True, default=False)


def normalized_attention_features(
    Z: Float[Array, "M M"], probs: Float[Array, "K M"], query: Int[Array, " K"]
) -> Float[Array, "M K"]:
    """`F = [f_1, ..., f_K]` with `f_n = c̃_n / ||c̃_n||_2`, `c̃_n = P(·|n) ∘ e^{z_{ψ(n)}}`
    (Eqn 5 and Lemma 2, the `T → ∞` limit of `LN(X^T b_T)`).

    The logits are shifted by their maximum over the class's support before the
    exponential, so large `|z|` neither overflows nor underflows the whole vector.

    **Arguments:**

    - `Z`: attention logits, shape `(M, M)`.
    - `probs`: `P(l|n)`, shape `(K, M)`.
    - `query`: `ψ(n)`, shape `(K,)`.

    **Returns:**

    `F`, shape `(M, K)`, columns of unit norm.
    """
    logits = Z[query]
    support = probs > 0
    shift = jnp.max(jnp.where(support, logits, -jnp.inf), axis=1, keepdims=True)
    scores = probs * jnp.exp(jnp.where(support, logits - shift, 0))
    return (scores / jnp.linalg.norm(scores, axis=1, keepdims=True)).T


def _decoder_terms(
    t: Float[ArrayLike, ""], F: Float[Array, "M K"], eta_y: Float[ArrayLike, ""]
) -> tuple[Float[Array, ""], Float[Array, "K K"], Float[Array, "K K"]]:
    """`γ(t)`, `E = F^T F - I` and `A = (I - E') Q`, the pieces of Eqn 9."""
    M, K = F.shape
    dtype = F.dtype
    gamma = speed_gamma(jnp.asarray(t, dtype), jnp.asarray(M, dtype), K, jnp.asarray(eta_y, dtype))
    eye = jnp.eye(K, dtype=dtype)
    E = F.T @ F - eye
    A = (eye - e_prime(E)) @ q_matrix(K, jnp.asarray(M, dtype))
    return gamma, E, A


def _gradient(gamma: Float[Array, ""], F: Float[Array, "M K"], A: Float[Array, "K K"]) -> Float[Array, "M K"]:
    return gamma * (F @ A)


def _xi(gamma: Float[Array, ""], E: Float[Array, "K K"], A: Float[Array, "K K"]) -> Float[Array, " K"]:
    return -gamma * jnp.einsum("nk,kn->n", E, A)


def backprop_gradient(
    t: Float[ArrayLike, ""], F: Float[Array, "M K"], eta_y: Float[ArrayLike, ""]
) -> Float[Array, "M K"]:
    """The gradient reaching the attention layer, deterministic form of Theorem 1 (Eqn 9):
    `g_n(t) = γ(t) F (I - E') Q e_n = γ(t) [ι_n f_n - Σ_{n'≠n} β_{nn'} f_{n'}]` with
    `ι_n = [(I - E') Q]_{nn}`, `β_{nn'} = -[(I - E') Q]_{n'n}` (Eqns 85-89 with σ = θ = 0,
    derived). It is exactly `Y(t) (e_n - α_n)` of the expected modified decoder dynamics
    (Eqn 26, Theorem 5) with `F` frozen, `Y(0) = 0` and uniform classes.

    **Arguments:**

    - `t`: time (batch-1 SGD steps).
    - `F`: normalised attention features, shape `(M, K)`.
    - `eta_y`: decoder learning rate `η_Y`.

    **Returns:**

    `G = [g_1, ..., g_K]`, shape `(M, K)`.
    """
    gamma, _, A = _decoder_terms(t, F, eta_y)
    return _gradient(gamma, F, A)


def xi(t: Float[ArrayLike, ""], F: Float[Array, "M K"], eta_y: Float[ArrayLike, ""]) -> Float[Array, " K"]:
    """`ξ_n(t) = γ(t) Σ_{n'≠n} β_{nn'} f_n^T f_{n'}` (Theorem 1(a); `> 0` under Assumption 2).

    With `β_{nn'} = -[(I - E') Q]_{n'n}` and `E_{nn} = 0` this is `-γ [E (I - E') Q]_{nn}`.

    **Arguments:**

    - `t`: time (batch-1 SGD steps).
    - `F`: normalised attention features, shape `(M, K)`.
    - `eta_y`: decoder learning rate `η_Y`.

    **Returns:**

    `ξ`, shape `(K,)`.
    """
    gamma, E, A = _decoder_terms(t, F, eta_y)
    return _xi(gamma, E, A)


def theory_vector_field(t: Float[ArrayLike, ""], state: TheoryState, args: TheoryArgs) -> TheoryState:
    """The L2 decoupled theory flow (Eqn 10 with the Eqn 9 gradient):

        ż_m = η_Z Σ_{n∈ψ^{-1}(m)} π_n diag(f_n) P^⊥_{f_n} g_n,     Ḃ_n = η_Z π_n ξ_n,

    with `π_n = 1/K` if `args.class_weighted` else 1; rows of `Z` that are no class's
    query stay fixed. On a distinct token `l` of class `n` this gives
    `ż_{ψ(n)l} = η_Z π_n f_{nl}² ξ_n` (Eqn 98), so Eqns 11-12 hold exactly along the flow.

    **Arguments:**

    - `t`: time (batch-1 SGD steps).
    - `state`: a `TheoryState` (`Z` of shape `(M, M)`, `B` of shape `(K,)`).
    - `args`: a `TheoryArgs`.

    **Returns:**

    The time derivative, a `TheoryState`.
    """
    dtype = state.Z.dtype
    K = args.probs.shape[0]
    F = normalized_attention_features(state.Z, args.probs.astype(dtype), args.query)
    gamma, E, A = _decoder_terms(t, F, args.eta_y)
    G = _gradient(gamma, F, A)
    # diag(f_n) P^⊥_{f_n} g_n with ||f_n|| = 1, one row per class.
    rows = (F * (G - F * jnp.sum(F * G, axis=0))).T
    rate = jnp.asarray(args.eta_z, dtype)
    if args.class_weighted:
        rate = rate / K
    dZ = jnp.zeros_like(state.Z).at[args.query].add(rate * rows)
    return TheoryState(Z=dZ, B=rate * _xi(gamma, E, A))


class ScalarState(eqx.Module):
    """State of the L3 model.

    **Fields:**

    - `z`: logit `z_{ml}` of the single common token (scalar).
    - `B`: `B_n(t)` (scalar; the same for every class in this model).
    """

    z: Float[Array, ""]
    B: Float[Array, ""]


class ScalarArgs(eqx.Module):
    """Arguments of the L3 model.

    **Fields:**

    - `M`: vocabulary size.
    - `K`: number of classes.
    - `eta_y`: decoder learning rate `η_Y`.
    - `eta_z`: attention learning rate `η_Z`.
    - `C0`: `C_0 = ρ_0⁴ / K` (Eqn 13).
    """

    M: ArrayLike
    K: ArrayLike
    eta_y: ArrayLike
    eta_z: ArrayLike
    C0: ArrayLike


def scalar_vector_field(t: Float[ArrayLike, ""], state: ScalarState, args: ScalarArgs) -> ScalarState:
    """The L3 scalar phase-transition model of Theorem 4 (Appendix F):

        ż = -C_0^{-1} η_Z γ(t) e^{4z},      Ḃ = η_Z ξ_n = η_Z C_0^{-1} γ(t) e^{4z}.

    From `z(0) = B(0) = 0` its solution is `e^{-4z} = 1 + 4Γ(t)/C_0`,
    `B = ¼ ln(1 + 4Γ(t)/C_0)` (`phase_B_exact`).

    **Arguments:**

    - `t`: time (batch-1 SGD steps).
    - `state`: a `ScalarState`.
    - `args`: a `ScalarArgs`.

    **Returns:**

    The time derivative, a `ScalarState`.
    """
    dtype = state.z.dtype
    M, K, eta_y, eta_z, C0 = (
        jnp.asarray(x, dtype) for x in (args.M, args.K, args.eta_y, args.eta_z, args.C0)
    )
    rate = eta_z * speed_gamma(jnp.asarray(t, dtype), M, K, eta_y) * jnp.exp(4 * state.z) / C0
    return ScalarState(z=-rate, B=rate)
