"""Your own model on attnflow: a one-layer attention model that none of the five papers studies,
trained by gradient flow until its loss crosses a threshold (the time located exactly by root finding),
swept over two settings × 64 seeds.

The task, in-context retrieval: a sequence of `tokens` random unit vectors in R^d and a query equal to
one of them; the model attends with softmax(Xᵀ W q) and reads out v·(X attention); the target is
⟨v*, the queried token⟩. Run it from the repository root:

    python examples/custom_model.py
    attnflow sweep examples.custom_model:Retrieval --grid eta_w=0.5,2 --grid tokens=4,8 --seeds 64 --out sweep
"""

import jax
import jax.numpy as jnp

import dynamics
from dynamics import Interval, param


class Retrieval(dynamics.AbstractSimulation):
    """Gradient flow on (W, v) of the retrieval loss from a small random start; stops at `loss_below`."""

    tokens: int = param(8, Interval(2), doc="sequence length")
    dim: int = param(8, Interval(1), doc="token dimension d")
    samples: int = param(256, Interval(1), doc="sequences in the (fixed) training set")
    eta_w: float = param(1.0, Interval.positive(), doc="rate of the attention W", traced=True)
    t1: float = param(400.0, Interval.positive(), doc="end time", traced=True)
    threshold: float = param(0.03, Interval.positive(), doc="loss that stops the run")
    dtype: str = dynamics.dtype_param("float64")
    event_names = ("loss_below",)

    def run(self, key) -> dynamics.Run:
        k_x, k_j, k_star, k_init = jax.random.split(key, 4)
        X = jax.random.normal(k_x, (self.samples, self.dim, self.tokens), self.dtype)
        X = X / jnp.linalg.norm(X, axis=1, keepdims=True)
        queried = jax.random.randint(k_j, (self.samples, 1, 1), 0, self.tokens)
        q = jnp.take_along_axis(X, queried, axis=2)[..., 0]
        y = q @ jax.random.normal(k_star, (self.dim,), self.dtype)

        def loss(params):
            attention = jax.nn.softmax(jnp.einsum("sdt,de,se->st", X, params["W"], q), axis=-1)
            return 0.5 * jnp.mean((jnp.einsum("d,sdt,st->s", params["v"], X, attention) - y) ** 2)

        start = {"W": jnp.zeros((self.dim, self.dim), self.dtype), "v": jnp.zeros(self.dim, self.dtype)}
        start = jax.tree.map(lambda p, k: 0.01 * jax.random.normal(k, p.shape, p.dtype), start,
                             dict(zip(start, jax.random.split(k_init))))  # fmt: skip
        ts = jnp.linspace(0.0, self.t1, 41, dtype=self.dtype)
        return dynamics.gradient_flow(
            loss, start, rates={"W": self.eta_w, "v": 1.0}, t1=self.t1,
            save=dynamics.Save(ts=ts, fn=lambda t, p, args: {"loss": loss(p)}),
            events={"loss_below": dynamics.Crossing(lambda p: loss(p) - self.threshold)},  # exact time
        )  # fmt: skip


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    sweep = dynamics.sweep(Retrieval(), {"eta_w": [0.5, 2.0], "tokens": [4, 8]}, num_seeds=64, progress=True)
    reached = sweep["event"] == 0  # the others ran to t1 without crossing
    print("fraction of seeds that reached the threshold:\n", reached.mean("seed").to_pandas())
    print("median time to reach it, over the seeds that did:\n",
          sweep["t_stop"].where(reached).median("seed").to_pandas())  # fmt: skip
