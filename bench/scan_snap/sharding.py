"""Many devices in one process: a chunk of runs laid out over the devices with
`device_put(NamedSharding)` under `jit(vmap(run))` (the compiler partitions the batched program),
against `jit(shard_map(vmap(run)))` (each device runs its own share of the runs on its own).

The difference matters for adaptive solves: under `vmap` a Diffrax solve is one while loop that
runs until every run in the batch has finished; partitioned by the compiler, the loop's condition
spans all devices, while under `shard_map` each device's loop stops when its own runs are done.

- **flow**: Scan and Snap L1 (`PopulationFlow`, Syn-Medium `num_last=1`, uniform init so the runs
  take different step counts, float64).
- **scan**: Scan and Snap L0 (`SGD`, Syn-Small, `--steps` steps of heavy-ball SGD, float32).

Run it with several (forced) CPU devices; the script sets
`XLA_FLAGS=--xla_force_host_platform_device_count=--devices` itself before JAX starts:

    python bench/scan_snap/sharding.py --devices 4 --seeds 64 --repeats 5

Both sides compile before timing; each repeat times one call of each, alternating which goes
first; medians over `--repeats`. Prints the seconds per side and ends with

    ratio named/shard_map (wall time): flow X.XX, scan Y.YY

(> 1: `shard_map` is faster). The two sides' outputs are checked equal.
"""

import argparse
import os
import statistics
import sys
import time


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=4, help="forced CPU devices")
    parser.add_argument("--seeds", type=int, default=64, help="runs per call (a multiple of --devices)")
    parser.add_argument("--steps", type=int, default=200, help="SGD steps of the scan")
    parser.add_argument("--t1", type=float, default=300.0, help="end time of the flow")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per side")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    args = _parse(argv)
    if "jax" in sys.modules:
        raise RuntimeError("run this benchmark in a fresh process: it sets the CPU device count")
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    import dynamics
    import tasks.scan_snap as ss

    jax.config.update("jax_enable_x64", True)
    mesh = Mesh(np.asarray(jax.devices()), ("seeds",))
    spec = PartitionSpec("seeds")
    sharding = NamedSharding(mesh, spec)

    def sides(sim):
        def run(seed):
            return sim.run(dynamics.seed_key(seed))

        named = jax.jit(jax.vmap(run))
        mapped = jax.jit(
            jax.shard_map(jax.vmap(run), mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
        )
        seeds = jax.device_put(np.arange(args.seeds), sharding)
        return {"named": lambda: named(seeds), "shard_map": lambda: mapped(seeds)}

    sims = {
        "flow": ss.PopulationFlow(task=ss.Synthetic(dataset="syn_medium"), init="uniform", t1=args.t1),
        "scan": ss.SGD(task=ss.Synthetic(dataset="syn_small"), num_steps=args.steps, every=args.steps // 10),
    }
    print(f"{jax.device_count()} devices, {args.seeds} runs per call")
    print(f"{'':5} {'first named':>12} {'first map':>10} {'named (s)':>10} {'map (s)':>9} {'ratio':>6}")
    results = {}
    for name, sim in sims.items():
        calls = sides(sim)
        first, outputs = {}, {}
        for side, call in calls.items():
            start = time.perf_counter()
            outputs[side] = jax.block_until_ready(call())
            first[side] = time.perf_counter() - start
        for a, b in zip(jax.tree.leaves(outputs["named"]), jax.tree.leaves(outputs["shard_map"])):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
        times = {side: [] for side in calls}
        for repeat in range(args.repeats):
            for side in list(calls) if repeat % 2 == 0 else list(calls)[::-1]:
                start = time.perf_counter()
                jax.block_until_ready(calls[side]())
                times[side].append(time.perf_counter() - start)
        named, mapped = statistics.median(times["named"]), statistics.median(times["shard_map"])
        results[name] = {"named": named, "shard_map": mapped, "ratio": named / mapped}
        print(
            f"{name:5} {first['named']:>12.2f} {first['shard_map']:>10.2f} {named:>10.3f} {mapped:>9.3f} "
            f"{named / mapped:>6.2f}"
        )
    flow, scan = results["flow"]["ratio"], results["scan"]["ratio"]
    print(f"ratio named/shard_map (wall time): flow {flow:.2f}, scan {scan:.2f}")
    return results


if __name__ == "__main__":
    main()
