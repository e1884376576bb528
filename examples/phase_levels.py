"""Two levels of one's own, for `attnflow sweep` from a checkout (the level is named
`examples.phase_levels:CLASS`):

- `TeacherFlow`: the two-layer linear network y = W₂W₁x learning the teacher diag(3, 2, 1) from a
  start of 10⁻³, whose plateaus sit at saddles known in closed form (losses 7, 2.5, 0.5 and the
  minimum 0; indices 9, 4, 1, 0): `--analyse phases,saddles` finds them.
- `QuadraticDescent`: gradient descent on a quadratic with largest Hessian eigenvalue λ, whose loss
  grows exactly for a step η above 2/λ: `--refine 'growth>1'` locates that edge along η, or the
  curve ηλ = 2 over η and λ.

```bash
attnflow sweep examples.phase_levels:TeacherFlow --seeds 8 --analyse phases,saddles --out teacher
attnflow sweep examples.phase_levels:QuadraticDescent --grid eta=0.1,0.2,0.4,0.8,1.6 --seeds 3 \\
    --refine 'growth>1' --budget 12 --out edge
attnflow sweep examples.phase_levels:QuadraticDescent --grid eta=0.3,0.6,1.2 --grid lam=1.5,3,6 \\
    --seeds 3 --refine 'growth>1' --budget 250 --out plane
```
"""

import jax
import jax.numpy as jnp

import dynamics

TEACHER = jnp.array([3.0, 2.0, 1.0])
PLATEAU_LOSSES = [0.5 * float(jnp.sum(TEACHER[k:] ** 2)) for k in range(4)]
"""7, 2.5, 0.5 and 0: ½ Σ of the singular values not yet learnt."""
PLATEAU_INDICES = [9, 4, 1, 0]
"""The saddles' indices: (3 − k)² negative Hessian eigenvalues with k modes learnt (3 × 3 factors)."""


def _loss(params):
    return 0.5 * jnp.sum((params["W2"] @ params["W1"] - jnp.diag(TEACHER)) ** 2)


def _saved(t, params, args):
    grad = jax.grad(_loss)(params)
    grad_norm = jnp.sqrt(sum(jnp.sum(leaf**2) for leaf in jax.tree.leaves(grad)))
    return {"loss": _loss(params), "grad_norm": grad_norm, "params": params}


class TeacherFlow(dynamics.AbstractSimulation):
    """The gradient flow of the teacher's loss from W₁, W₂ with entries N(0, scale²), 100 saves per
    decade of t ∈ [10⁻², 10²], saving the loss, the gradient norm and the parameters."""

    scale: float = dynamics.param(1e-3, dynamics.Interval.positive(), doc="the start's scale")
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        key_1, key_2 = jax.random.split(key)
        start = {
            "W1": self.scale * jax.random.normal(key_1, (3, 3), self.float_dtype),
            "W2": self.scale * jax.random.normal(key_2, (3, 3), self.float_dtype),
        }
        save = dynamics.Save(ts=jnp.geomspace(1e-2, 1e2, 401), fn=_saved)
        return dynamics.gradient_flow(_loss, start, t1=1e2, save=save)

    def landscape(self, key):
        return dynamics.Landscape(_loss, saved=lambda values: values["params"])


class QuadraticDescent(dynamics.AbstractSimulation):
    """Gradient descent on ½ wᵀ diag(λ, λ/3) w from w ~ N(0, I), saving at its end how many times
    its loss grew: above 1 exactly where η > 2/λ (for long enough a run)."""

    eta: float = dynamics.param(0.1, dynamics.Interval.positive(), doc="step size", traced=True)
    lam: float = dynamics.param(
        4.0, dynamics.Interval.positive(), doc="largest Hessian eigenvalue", traced=True
    )
    num_steps: int = dynamics.param(400, dynamics.Interval(1), doc="steps")
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        curvature = jnp.array([self.lam, self.lam / 3], self.float_dtype)

        def loss(w):
            return 0.5 * jnp.sum(curvature * w**2)

        start = jax.random.normal(key, (2,), self.float_dtype)
        save = dynamics.Save(every=self.num_steps, fn=lambda step, w, args: {"growth": loss(w) / loss(start)})
        return dynamics.train(loss, start, dynamics.gd(self.eta), num_steps=self.num_steps, save=save)
