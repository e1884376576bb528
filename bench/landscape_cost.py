"""The cost of the landscape analysis relative to the run it analyses, on a two-layer linear
network fitted to n samples, L(W₁, W₂) = ½ mean_i ‖W₂W₁xᵢ − Axᵢ‖² with h × d and d × h weights
(d = 16, h = 32: 1024 parameters; n = 256 Gaussian inputs), trained by full-batch gradient
descent in float64.

- **run**: `dynamics.train` for `--steps` steps, saving the loss every `--every` steps.
- **sharpness**: the same run saving `dynamics.landscape.edge_of_stability_save` instead (the loss and the
  top Hessian eigenvalue by `--lanczos` Lanczos steps against 2/η, every `--every` steps), each
  Lanczos run started from the top eigenvector of the save before.
- **cold**: the same, each Lanczos run from the same random start (`dynamics.landscape.sharpness` in the
  save function), as one would write it without that warm start.
- **flow**: the same run saving also its distance from the gradient flow started at the same point
  (`dynamics.landscape.with_flow_distance`, the flow integrated once beside the run, Tsit5 at rtol 1e-8),
  as `along.flow` does in a level.
- **phases**: `dynamics.landscape.phases` on the saved losses of the run (after it).
- **polish**: `dynamics.landscape.critical_point` with its full Hessian spectrum from a point near the
  saddle at the origin (the run's own start), once compiled.

It also prints the largest relative error of both sharpness runs against the top eigenvalue of
the dense Hessian at every save (apart, at the first two saves, where the warm start has no
eigenvector yet to start from, and over the rest), so that fewer steps are not bought with a
wrong value.

Every side is compiled before timing (the first calls are printed apart); each repeat times one
call of each, rotating the order of the four runs; medians over `--repeats`. It ends with

    overhead: sharpness every E steps X % (from a random start C %), flow alongside F %,
    phases Y %; polish at P parameters Z s

(one line)
where an overhead is (analysed − run) / run. Run from the repository root:

    python bench/landscape_cost.py --repeats 7
"""

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

import dynamics


def problem(d: int, h: int, n: int, scale: float):
    """The loss on `n` samples of a target with singular values 1..d, and a start of size
    `scale`."""
    target = jnp.diag(jnp.linspace(1.0, float(d), d))
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    inputs = jax.random.normal(k3, (n, d))
    outputs = inputs @ target.T
    start = {"W1": scale * jax.random.normal(k1, (h, d)), "W2": scale * jax.random.normal(k2, (d, h))}

    def loss(params):
        predicted = inputs @ params["W1"].T @ params["W2"].T
        return 0.5 * jnp.mean(jnp.sum((predicted - outputs) ** 2, axis=-1))

    return loss, start


def sharpness_errors(loss, optimizer, start, args, runs) -> dict[str, tuple[float, float]]:
    """For each run of `runs` (name: jitted run saving `sharpness`), the largest relative error
    of its saved sharpness against the dense Hessian's top eigenvalue at the same saves: over the
    first two saves and over the rest."""
    keep = dynamics.Save(every=args.every, fn=lambda step, p, _: p)
    points = dynamics.train(loss, start, optimizer, num_steps=args.steps, save=keep).values
    dense = jax.lax.map(lambda p: jnp.max(dynamics.landscape.hessian_spectrum(loss, p)[0]), points)
    errors = {}
    for name, fn in runs.items():
        error = jnp.abs(fn(start).values["sharpness"] - dense) / dense
        errors[name] = (float(jnp.max(error[:2])), float(jnp.max(error[2:])))
    return errors


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--d", type=int, default=16, help="input and output dimension d")
    parser.add_argument("--h", type=int, default=32, help="hidden width h (parameters: 2 d h)")
    parser.add_argument("--n", type=int, default=256, help="samples")
    parser.add_argument("--steps", type=int, default=5000, help="gradient descent steps")
    parser.add_argument("--every", type=int, default=100, help="save period in steps")
    parser.add_argument("--lanczos", type=int, default=20, help="Lanczos steps of the sharpness")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per side")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    loss, start = problem(args.d, args.h, args.n, 1e-2)
    eta = 0.5 / args.d  # below 2/λ_max near the minimum (about 2d times the inputs' variance)
    optimizer = dynamics.gd(eta)

    @jax.jit
    def run(params):
        save = dynamics.Save(every=args.every, fn=lambda step, p, _: {"loss": loss(p)})
        return dynamics.train(loss, params, optimizer, num_steps=args.steps, save=save)

    @jax.jit
    def run_sharp(params):
        save = dynamics.landscape.edge_of_stability_save(loss, eta, every=args.every, num_iters=args.lanczos)
        return dynamics.train(loss, params, optimizer, num_steps=args.steps, save=save)

    @jax.jit
    def run_cold(params):
        def record(step, p, _):
            top = dynamics.landscape.sharpness(loss, p, num_iters=args.lanczos)
            return {"loss": loss(p), "sharpness": top, "sharpness_ratio": top * eta / 2}

        return dynamics.train(
            loss, params, optimizer, num_steps=args.steps, save=dynamics.Save(every=args.every, fn=record)
        )

    @jax.jit
    def run_flow(params):
        save = dynamics.Save(every=args.every, fn=lambda step, p, _: {"loss": loss(p)})
        save = dynamics.landscape.with_flow_distance(save, loss, params, eta, num_steps=args.steps)
        return dynamics.train(loss, params, optimizer, num_steps=args.steps, save=save)

    split = jax.jit(lambda ts, losses: dynamics.landscape.phases(ts, losses))
    polish = jax.jit(lambda p: dynamics.landscape.critical_point(loss, p))

    first = {"run": _timed(run, start)}  # each first call compiles
    done = run(start)
    first |= {
        "sharpness": _timed(run_sharp, start),
        "cold": _timed(run_cold, start),
        "flow": _timed(run_flow, start),
        "phases": _timed(split, done.ts, done.values["loss"]),
        "polish": _timed(polish, start),
    }
    times = {name: [] for name in first}
    runs = [("run", run), ("sharpness", run_sharp), ("cold", run_cold), ("flow", run_flow)]
    for repeat in range(args.repeats):
        for name, fn in runs[repeat % 4 :] + runs[: repeat % 4]:
            times[name].append(_timed(fn, start))
        times["phases"].append(_timed(split, done.ts, done.values["loss"]))
        times["polish"].append(_timed(polish, start))
    median = {name: statistics.median(values) for name, values in times.items()}

    point = polish(start)
    parameters = sum(leaf.size for leaf in jax.tree.leaves(start))
    print(
        f"{parameters} parameters, {args.n} samples, {args.steps} steps of GD (eta {eta:.4g}), "
        f"saves every {args.every}"
    )
    print(f"{'':10} {'first (s)':>10} {'median (s)':>11}")
    for name in first:
        print(f"{name:10} {first[name]:>10.3f} {median[name]:>11.4f}")
    status = dynamics.landscape.CriticalPointStatus(int(point.status)).name
    print(f"polish: {status}, |grad| {float(point.grad_norm):.2e}, index {int(point.index)}")
    errors = sharpness_errors(loss, optimizer, start, args, {"warm": run_sharp, "cold": run_cold})
    for name, (first_two, rest) in errors.items():
        print(
            f"sharpness by {args.lanczos} Lanczos steps, {name}: largest relative error {first_two:.1e} at "
            f"the first two saves, {rest:.1e} after (dense Hessian at every save)"
        )
    result = {
        "sharpness_overhead": (median["sharpness"] - median["run"]) / median["run"],
        "cold_overhead": (median["cold"] - median["run"]) / median["run"],
        "warm_error": errors["warm"][1],
        "cold_error": errors["cold"][1],
        "flow_overhead": (median["flow"] - median["run"]) / median["run"],
        "phases_overhead": median["phases"] / median["run"],
        "polish_seconds": median["polish"],
        "parameters": parameters,
    }
    print(
        f"overhead: sharpness every {args.every} steps {100 * result['sharpness_overhead']:.0f} % "
        f"(from a random start {100 * result['cold_overhead']:.0f} %), "
        f"flow alongside {100 * result['flow_overhead']:.0f} %, "
        f"phases {100 * result['phases_overhead']:.1f} %; polish at {parameters} parameters "
        f"{result['polish_seconds']:.2f} s"
    )
    return result


if __name__ == "__main__":
    main()
