"""The learners: the linear transformer $f = V X Q_{:, x_{T+1}}$ (Eqn 2) and the softmax
variant of Fig. 2; the SCB sampler; per-sample and mini-batch losses (Eqn 3); the exact
population loss and expected gradients (Lemmas B.7-B.8); exact enumeration."""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ._data import Instance, mu_inner

LOSS_SCALE = 0.5
"""The constant of the squared loss (Eqn 3), 1/2 (recon); the paper's constant was lost."""


class Batch(eqx.Module):
    r"""SCB examples: `context` (B, T) tokens $x_1, \dots, x_T$, `last` (B,) the query $x_{T+1}$, `label`
    (B,) $x_o$."""

    context: Int[Array, "B T"]
    last: Int[Array, " B"]
    label: Int[Array, " B"]


def _inverse_cdf(u: Float[Array, "..."], probs: Float[Array, "... K"]) -> Int[Array, "..."]:
    """Categorical draws by inversion: the first index whose cumulative probability exceeds u
    (zero-probability categories are never drawn)."""
    cdf = jnp.cumsum(probs, axis=-1)
    index = jnp.sum(u[..., None] >= cdf, axis=-1, dtype=jnp.int32)  # int32 in float64 mode too
    return jnp.minimum(index, probs.shape[-1] - 1)


def sample(key: PRNGKeyArray, inst: Instance, batch: int) -> Batch:
    r"""Draw `batch` fresh examples (Eqn 1): $x_1, \dots, x_{T+1}$ i.i.d. μ, $s \sim q^{(x_{T+1})}$,
    $x_o \sim P_{:, x_s}$
    (inverse-CDF sampling: one uniform per draw).

    **Returns:** a [`Batch`][] (int32 tokens).
    """
    T = inst.T
    u = jax.random.uniform(key, (batch, T + 3), inst.mu.dtype)
    x = _inverse_cdf(u[:, : T + 1], inst.mu)
    last = x[:, T]
    s = _inverse_cdf(u[:, T + 1], inst.Q_star[:, last].T)
    src = jnp.take_along_axis(x, s[:, None], axis=1)[:, 0]
    label = _inverse_cdf(u[:, T + 2], inst.P[:, src].T)
    return Batch(context=x[:, :T], last=last, label=label)


def _bins(context: Int[Array, " T"], weights: Float[Array, " T"], N: int) -> Float[Array, " N"]:
    """X a: the position weights summed into token bins (one-hot contraction)."""
    return jax.nn.one_hot(context, N, dtype=weights.dtype).T @ weights


class LinearSCB(eqx.Module):
    """The linear transformer of Eqn 2: $f(X; V, Q) = V X Q_{:, x_{T+1}}$.

    **Fields:** `V` (N, N) output layer; `Q` (T, N) attention (column k = attention when the last
    token is k).
    """

    V: Float[Array, "N N"]
    Q: Float[Array, "T N"]

    def attention(self, last: Int[Array, ""]) -> Float[Array, " T"]:
        """The attention over the T positions when the last token is `last`: Q[:, last]."""
        return self.Q[:, last]

    def __call__(self, context: Int[Array, " T"], last: Int[Array, ""]) -> Float[Array, " N"]:
        return self.V @ _bins(context, self.attention(last), self.V.shape[0])


class SoftmaxSCB(eqx.Module):
    r"""The softmax variant of Fig. 2 (Section 5.2): $f = V X \operatorname{softmax}(W_{:, x_{T+1}})$."""

    V: Float[Array, "N N"]
    W: Float[Array, "T N"]

    def attention(self, last: Int[Array, ""]) -> Float[Array, " T"]:
        """softmax(W[:, last])."""
        return jax.nn.softmax(self.W[:, last])

    def __call__(self, context: Int[Array, " T"], last: Int[Array, ""]) -> Float[Array, " N"]:
        return self.V @ _bins(context, self.attention(last), self.V.shape[0])

    def attention_matrix(self) -> Float[Array, "T N"]:
        """All columns softmax(W[:, k]) (comparable with Q of the linear model)."""
        return jax.nn.softmax(self.W, axis=0)


def scratch_init(inst: Instance) -> LinearSCB:
    """The from-scratch initialisation of Algorithm 1: V₀ = μ1ᵀ, Q₀ = 11ᵀ/T."""
    N, T = inst.N, inst.T
    return LinearSCB(V=jnp.tile(inst.mu[:, None], (1, N)), Q=jnp.full((T, N), 1.0 / T, inst.mu.dtype))


def sample_loss(model, context, last, label, scale=LOSS_SCALE):
    r"""Per-sample loss (Eqn 3): $\mathrm{scale} \cdot \lVert e_{x_o} - f(X) \rVert^2$."""
    f = model(context, last)
    r = jax.nn.one_hot(label, f.shape[0], dtype=f.dtype) - f
    return jnp.asarray(scale, f.dtype) * jnp.sum(r * r)


def batch_loss(model, batch: Batch, scale=LOSS_SCALE):
    """The mini-batch loss (1/B) Σ_i l(X_i, x_o,i) (unregularised; the l1 term is the prox's)."""
    losses = jax.vmap(sample_loss, in_axes=(None, 0, 0, 0, None))(
        model, batch.context, batch.last, batch.label, scale
    )
    return jnp.mean(losses)


def sample_gradients(model: LinearSCB, context, last, label) -> LinearSCB:
    r"""Closed-form per-sample gradients of the linear model (Lemma B.3, loss constant 1/2):
    $\nabla_V l = -r (Xa)^\top$, $\nabla_{Q_{:,k}} l = -X^\top V^\top r$ (other columns 0),
    $r = e_{x_o} - V X a$."""
    N = model.V.shape[0]
    xa = _bins(context, model.Q[:, last], N)
    r = jax.nn.one_hot(label, N, dtype=xa.dtype) - model.V @ xa
    grad_q = jnp.zeros_like(model.Q).at[:, last].set(-(model.V.T @ r)[context])
    return LinearSCB(V=-jnp.outer(r, xa), Q=grad_q)


def precondition(grads: LinearSCB, mu) -> LinearSCB:
    """Eqn 4: G = (I − 11ᵀ/rows) ∇ D⁻¹ for both blocks (scale column k by 1/μ_k, then centre)."""

    def one(g):
        g = g / mu
        return g - jnp.mean(g, axis=0, keepdims=True)

    return LinearSCB(V=one(grads.V), Q=one(grads.Q))


def population_scalars(model: LinearSCB, inst: Instance) -> dict:
    """c1 = ⟨Q, Q⋆⟩_μ, c2 = ‖Q‖²_μ, A1 = ⟨V − μ1ᵀ, P̄⟩_μ, A2 = ‖V‖²_μ − ‖Vμ‖², and Vμ (the
    scalars of Lemmas B.7-B.8)."""
    mu = inst.mu
    Vmu = model.V @ mu
    Pbar = inst.P - mu[:, None]
    return dict(
        c1=mu_inner(model.Q, inst.Q_star, mu),
        c2=mu_inner(model.Q, model.Q, mu),
        A1=mu_inner(model.V - mu[:, None], Pbar, mu),
        A2=mu_inner(model.V, model.V, mu) - jnp.dot(Vmu, Vmu),
        Vmu=Vmu,
    )


def population_loss(model: LinearSCB, inst: Instance) -> Float[Array, ""]:
    """Exact population loss (derived, loss constant 1/2), valid for any (V, Q):
    L = ½ [1 − 2 c1 A1 − 2 s1 ⟨Vμ, μ⟩ + c2 A2 + s2 ‖Vμ‖²] with s1 = Σ_k μ_k 1ᵀQ[:,k] and
    s2 = Σ_k μ_k (1ᵀQ[:,k])²; with unit column sums (s1 = s2 = 1) this is
    ½ [1 − 2⟨Vμ, μ⟩ + ‖Vμ‖² − 2 c1 A1 + c2 A2]. Its autodiff gradient is the exact expected gradient.
    """
    s = population_scalars(model, inst)
    mu = inst.mu
    col = jnp.sum(model.Q, axis=0)
    s1, s2 = jnp.sum(mu * col), jnp.sum(mu * col * col)
    value = (
        1.0
        - 2.0 * s["c1"] * s["A1"]
        - 2.0 * s1 * jnp.dot(s["Vmu"], mu)
        + s["c2"] * s["A2"]
        + s2 * jnp.dot(s["Vmu"], s["Vmu"])
    )
    return jnp.asarray(LOSS_SCALE, mu.dtype) * value


def expected_gradients(model: LinearSCB, inst: Instance) -> LinearSCB:
    r"""Raw expected gradients (Lemma B.7): E∇_V = −(P M(c1) − V M(c2)) with M(c) = c(D − μμᵀ) + μμᵀ;
    $E\nabla_{Q_{:,k}} = -\mu_k [A1\, q^{(k)} - A2\, Q_{:,k} +
    (\langle V\mu, \mu \rangle - \lVert V\mu \rVert^2) 1]$."""
    s = population_scalars(model, inst)
    mu = inst.mu
    D = jnp.diag(mu)
    mm = jnp.outer(mu, mu)

    def M(c):
        return c * (D - mm) + mm

    gV = -(inst.P @ M(s["c1"]) - model.V @ M(s["c2"]))
    const = jnp.dot(s["Vmu"], mu) - jnp.dot(s["Vmu"], s["Vmu"])
    gQ = -mu * (s["A1"] * inst.Q_star - s["A2"] * model.Q + const)
    return LinearSCB(V=gV, Q=gQ)


def expected_preconditioned(model: LinearSCB, inst: Instance) -> LinearSCB:
    """Expected preconditioned gradients (Lemma B.8):
    E G_V = −[c1 P̄ − c2 (V − μ1ᵀ) + (c2 − 1)(Vμ − μ)1ᵀ], E G_Q = −[A1 Q̄* − A2 (Q − 11ᵀ/T)]
    (unit column sums)."""
    s = population_scalars(model, inst)
    mu = inst.mu
    one_t = jnp.asarray(1.0 / inst.T, mu.dtype)
    GV = -(
        s["c1"] * (inst.P - mu[:, None])
        - s["c2"] * (model.V - mu[:, None])
        + (s["c2"] - 1.0) * (s["Vmu"] - mu)[:, None]
    )
    GQ = -(s["A1"] * (inst.Q_star - one_t) - s["A2"] * (model.Q - one_t))
    return LinearSCB(V=GV, Q=GQ)


def enumerate_population(model, inst: Instance, scale=LOSS_SCALE) -> tuple:
    """Exact expectation by enumerating all Nᵀ⁺¹ token sequences and N labels (tiny sizes).

    **Returns:** `(loss, grads)`: E l and E ∇l (autodiff of the per-sample loss), float64.
    """
    N, T = inst.N, inst.T
    seqs = np.array(list(itertools.product(range(N), repeat=T + 1)), dtype=np.int32)
    mu = np.asarray(inst.mu)
    P, Qs = np.asarray(inst.P), np.asarray(inst.Q_star)
    p_seq = np.prod(mu[seqs], axis=1)
    rows, weights = [], []
    for n in range(N):
        # Pr[x_o = n | seq] = Σ_t q^(k)_t P[n, x_t]
        p_lab = np.einsum("st,st->s", Qs[:, seqs[:, T]].T, P[n, seqs[:, :T]])
        rows.append(np.column_stack([seqs, np.full(len(seqs), n)]))
        weights.append(p_seq * p_lab)
    data = jnp.asarray(np.concatenate(rows))
    w = jnp.asarray(np.concatenate(weights), inst.mu.dtype)

    def expected(m):
        losses = jax.vmap(sample_loss, in_axes=(None, 0, 0, 0, None))(
            m, data[:, :T], data[:, T], data[:, T + 1], scale
        )
        return jnp.sum(w * losses)

    return jax.value_and_grad(expected)(model)
