"""The landscape along a run, on a model of your own: a two-layer linear network
L(W₁, W₂) = ½‖W₂W₁ − A‖²_F with A = diag(5, 2, 0.5), trained by gradient flow from a small start.
From a small start it learns the singular values of A one at a time (Saxe et al. 2014): the loss
sits on a plateau at ½ Σ_{i>k} s_i² near a saddle, escapes along the saddle's most negative
curvature, and moves on to the next plateau.

The script finds the plateaus of the saved run, polishes each to its saddle, and compares the
losses with the closed form; then it runs gradient descent at three step sizes, recording the
sharpness against 2/η and the distance to the gradient flow. Run it from the repository root:

    python examples/landscape.py
"""

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

import dynamics

SINGULAR_VALUES = jnp.array([5.0, 2.0, 0.5])


def loss(params):
    """½‖W₂W₁ − A‖²_F."""
    return 0.5 * jnp.sum((params["W2"] @ params["W1"] - jnp.diag(SINGULAR_VALUES)) ** 2)


def small_start(key, scale=1e-6):
    """W₁, W₂ with independent N(0, scale²) entries."""
    key1, key2 = jax.random.split(key)
    return {"W1": scale * jax.random.normal(key1, (3, 3)), "W2": scale * jax.random.normal(key2, (3, 3))}


def main():
    jax.config.update("jax_enable_x64", True)  # the polish to a saddle works in float64

    # 1. Gradient flow, saving the parameters, the loss and the gradient norm at log-spaced times.
    ts = jnp.geomspace(1e-2, 1e3, 301)
    save = dynamics.Save(
        ts=ts,
        fn=lambda t, p, args: {
            "params": p,
            "loss": loss(p),
            "grad_norm": jnp.linalg.norm(ravel_pytree(jax.grad(loss)(p))[0]),
        },
    )
    run = dynamics.gradient_flow(loss, small_start(jax.random.PRNGKey(0)), t0=0.0, t1=1e3, save=save)

    # 2. The plateaus of the run, and the saddle each one sits near.
    plateaus = dynamics.landscape.phases(run.ts, run.values["loss"], run.values["grad_norm"])
    count = int(plateaus.count)
    saddles = dynamics.landscape.plateau_saddles(
        loss, run.values["params"], plateaus.save_index[:count], plateaus.after_index[:count]
    )
    print("plateau  time span          loss      closed form  saddle index  escape overlap")
    for k in range(count):
        closed_form = 0.5 * float(jnp.sum(SINGULAR_VALUES[k:] ** 2))
        span = f"[{float(plateaus.start_time[k]):.3g}, {float(plateaus.end_time[k]):.3g}]"
        print(
            f"{k:7d}  {span:17s}  {float(plateaus.loss[k]):8.5f}  {closed_form:11.5f}"
            f"  {int(saddles.index[k]):12d}  {float(saddles.escape_overlap[k]):14.6f}"
        )

    # 3. Gradient descent below and past the edge of stability. At the minimum the sharpness is
    # λ_max = 2 s₁ = 10, so the edge 2/η is crossed at η = 0.2: past it, GD cannot settle there.
    start = {"W1": 0.5 * jnp.eye(3), "W2": 0.5 * jnp.eye(3)}
    print("eta    sharpness x eta/2  final loss  distance to the flow")
    for step_size in (0.02, 0.19, 0.21):
        save = dynamics.landscape.edge_of_stability_save(loss, step_size, every=50)
        gd = dynamics.train(loss, start, dynamics.gd(step_size), num_steps=200, save=save)
        gap = dynamics.landscape.gd_flow_gap(loss, start, step_size, num_steps=200, every=50)
        print(
            f"{step_size:4.2f}  {float(gd.values['sharpness_ratio'][-1]):17.3f}"
            f"  {float(gd.values['loss'][-1]):10.2e}  {float(gap.distance[-1]):20.2e}"
        )


if __name__ == "__main__":
    main()
