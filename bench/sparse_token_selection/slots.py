"""Sparse token selection: one online training step with the PE as slots (`SlotPE`) against the
same step with dense PE matrices, at the paper's size (T = 200, q = 3, N = 400 slots, d = 10).

A step draws a fresh batch (`sts.sample`), takes the gradient of `sts.loss` and applies a GD
update, all under one `jax.jit`. The two sides draw the same batch from the same key and differ
only in how the model reads E: a dense `(N, T)` matrix per example, or its T slots. The sides
alternate within every repeat (order swapped on odd repeats); the medians are reported and
compile time is excluded. Also printed: `max|dL|` and `max|dgrad|`, the largest differences of
the loss and gradient between the two sides on one batch (equal work: rounding only).

    python bench/sparse_token_selection/slots.py --repeats 5
"""

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

import tasks.sparse_token_selection as sts


def _step_fn(task: sts.STSConfig, batch_size: int, slots: bool, dtype):
    def step(model, key):
        batch = sts.sample(task, key, batch_size, slots=slots, dtype=dtype)
        grad = jax.grad(sts.loss)(model, batch)
        return jax.tree.map(lambda w, g: w - 0.1 * g, model, grad)

    return jax.jit(step)


def _seconds_per_step(step, model, key, steps: int) -> float:
    start = time.perf_counter()
    for i in range(steps):
        model = step(model, jax.random.fold_in(key, i))
    jax.block_until_ready(model)
    return (time.perf_counter() - start) / steps


def main(argv=None) -> dict:
    """Run the benchmark; **Returns:** the median seconds per step of each side, their ratio, the
    largest loss and gradient differences and each side's first (compiling) call in seconds."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--T", type=int, default=200)
    p.add_argument("--q", type=int, default=3)
    p.add_argument("--N", type=int, default=400)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=20, help="steps per timed repeat")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats; medians reported")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    args = p.parse_args(argv)
    dtype = jnp.dtype(args.dtype)
    if dtype == jnp.float64:
        jax.config.update("jax_enable_x64", True)
    task = sts.STSConfig(d=args.d, T=args.T, q=args.q, pe_dim=args.N)
    model = sts.random_init(task, jax.random.PRNGKey(0), dtype=dtype)
    key = jax.random.PRNGKey(1)

    dense_batch = sts.sample(task, key, args.batch, dtype=dtype)
    slot_batch = sts.sample(task, key, args.batch, slots=True, dtype=dtype)
    (loss_d, grad_d), (loss_s, grad_s) = (
        jax.value_and_grad(sts.loss)(model, b) for b in (dense_batch, slot_batch)
    )
    dloss = float(jnp.abs(loss_d - loss_s))
    dgrad = max(
        float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(grad_d), jax.tree.leaves(grad_s))
    )

    sides = {
        "dense": _step_fn(task, args.batch, False, dtype),
        "slots": _step_fn(task, args.batch, True, dtype),
    }
    compile_s = {}
    for name, step in sides.items():
        start = time.perf_counter()
        jax.block_until_ready(step(model, key))
        compile_s[name] = time.perf_counter() - start
    times = {name: [] for name in sides}
    for r in range(args.repeats):
        for name in list(sides)[:: 1 if r % 2 == 0 else -1]:
            times[name].append(_seconds_per_step(sides[name], model, key, args.steps))
    med = {name: statistics.median(t) for name, t in times.items()}
    ratio = med["dense"] / med["slots"]
    print(
        f"# d={task.d} T={task.T} q={task.q} N={task.m_E} batch={args.batch} {args.dtype}, "
        f"{args.steps} steps x {args.repeats} repeats"
    )
    print(f"{'side':>6} {'ms/step':>9} {'first call s':>13}")
    for name in sides:
        print(f"{name:>6} {1e3 * med[name]:>9.2f} {compile_s[name]:>13.2f}")
    print(f"max|dL| {dloss:.3g}  max|dgrad| {dgrad:.3g}")
    print(f"ratio dense/slots (s/step): {ratio:.2f}")
    return {
        "dense_s": med["dense"],
        "slots_s": med["slots"],
        "ratio": ratio,
        "dloss": dloss,
        "dgrad": dgrad,
        "first_call_s": compile_s,
    }


if __name__ == "__main__":
    main()
