"""The one-layer transformer `f_{W,V}(X) = σ(V X σ(Xᵀ W X))` (Eqn 1), its loss (Eqn 2), the
population loss and the perfect-classification test."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ._data import Population

TAU_TIE = 1e-9
"""A label logit must beat every other logit by more than this for perfect
classification (recon: the paper does not say how ties count): ties are failures."""


class DecisionListModel(eqx.Module):
    """`f_{W,V}` with one-hot embeddings (`d = L`), Eqn 1. Column softmaxes: column `j` of
    `σ(Xᵀ W X)` is the attention of position `j` over the positions `i` (`S[i, j] = W[x_i, x_j]`).

    **Fields:** `W`, `V`: `(L, L)` float.
    """

    W: Float[Array, "L L"]
    V: Float[Array, "L L"]

    def attention(self, tokens: Int[Array, " n"]) -> Float[Array, "n n"]:
        """`A = σ(Xᵀ W X)`, column `j` = the attention of position `j` (sums to 1 over rows)."""
        return jax.nn.softmax(self.W[tokens[:, None], tokens[None, :]], axis=0)

    def logits(self, tokens: Int[Array, " n"]) -> Float[Array, "L n"]:
        """`V X A`: column `j` = the output logits of position `j`."""
        return self.V[:, tokens] @ self.attention(tokens)

    def __call__(self, tokens: Int[Array, " n"]) -> Float[Array, "L n"]:
        """`f_{W,V}(X) = σ(V X A)`, Eqn 1: column `j` = the label distribution of position `j`."""
        return jax.nn.softmax(self.logits(tokens), axis=0)


def sequence_loss(
    model: DecisionListModel, tokens: Int[Array, " n"], labels: Int[Array, " n"]
) -> Float[Array, ""]:
    """Eqn 2: `(1/n) Σ_j −log f(X)[y_j, j]`."""
    log_probs = jax.nn.log_softmax(model.logits(tokens), axis=0)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[None, :], axis=0))


def population_loss(model: DecisionListModel, population: Population) -> Float[Array, ""]:
    """`𝓛(W, V) = Σ_s w_s ℓ(s)` over the population (exact when it is the support of `D`),
    batched over all sequences."""
    losses = jax.vmap(sequence_loss, in_axes=(None, 0, 0))(model, population.tokens, population.labels)
    return jnp.sum(population.weights * losses)


def margins(model: DecisionListModel, population: Population) -> Float[Array, "K n"]:
    """The label logit minus the largest other logit, for every sequence and position."""

    def one(tokens, labels):
        logits = model.logits(tokens)
        is_label = jax.nn.one_hot(labels, logits.shape[0], axis=0, dtype=jnp.bool_)
        best_other = jnp.max(jnp.where(is_label, -jnp.inf, logits), axis=0)
        return jnp.take_along_axis(logits, labels[None, :], axis=0)[0] - best_other

    return jax.vmap(one)(population.tokens, population.labels)


def perfect(model: DecisionListModel, population: Population, tau: float = TAU_TIE) -> Bool[Array, ""]:
    """Perfect classification (our reading of the paper's term, recon): every margin exceeds `tau`
    on every sequence of the population. Exact when the population is the support of `D`; on a
    sample it says nothing about unseen sequences (use [`certified`][] there)."""
    return jnp.min(margins(model, population)) > tau
