"""The cost of progress bars inside runs: `dynamics.simulate(..., progress=True)` against
`progress=False` on the same simulation, one flow and one scan.

- **flow**: Scan and Snap L1 (`PopulationFlow`, Syn-Small, uniform init, float64): Diffrax's
  `TqdmProgressMeter` in the solve (a host callback every 20 solver steps).
- **scan**: Scan and Snap L0 (`SGD`, Syn-Small, `--steps` steps of heavy-ball SGD, float32): a
  host callback about 100 times a run.

Both sides are compiled before timing (their first calls are printed apart); each repeat
times one call of each, alternating which goes first; the medians over `--repeats` and their
ratio are printed per simulation, ending with the line

    ratio with/without meters: flow X.XX, scan Y.YY

(1.00: the meters cost nothing). The bars themselves are drawn on stderr; redirect it to
/dev/null to keep the table readable. Run from the repository root:

    python bench/scan_snap/progress_cost.py --repeats 7 2>/dev/null
"""

import argparse
import statistics
import time

import jax

import dynamics
import tasks.scan_snap as ss


def _time(sim: dynamics.AbstractSimulation, seeds: int, progress: bool) -> float:
    start = time.perf_counter()
    dynamics.simulate(sim, seeds, progress=progress)
    return time.perf_counter() - start


def measure(sim: dynamics.AbstractSimulation, seeds: int, repeats: int) -> dict[str, float]:
    """Median wall seconds of `simulate(sim, seeds)` without and with meters, interleaved.

    **Returns:** `first_off`, `first_on` (compiling calls), `off`, `on` (medians), `ratio` = on / off.
    """
    out = {"first_off": _time(sim, seeds, False), "first_on": _time(sim, seeds, True)}
    times = {False: [], True: []}
    for repeat in range(repeats):
        for progress in (False, True) if repeat % 2 == 0 else (True, False):
            times[progress].append(_time(sim, seeds, progress))
    out["off"], out["on"] = statistics.median(times[False]), statistics.median(times[True])
    out["ratio"] = out["on"] / out["off"]
    return out


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=8, help="seeds per call")
    parser.add_argument("--steps", type=int, default=2000, help="SGD steps of the scan")
    parser.add_argument("--t1", type=float, default=2000.0, help="end time of the flow")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per side")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    sims = {
        "flow": ss.PopulationFlow(task=ss.Synthetic(dataset="syn_small"), init="uniform", t1=args.t1),
        "scan": ss.SGD(task=ss.Synthetic(dataset="syn_small"), num_steps=args.steps, every=args.steps // 10),
    }
    print(f"{'':5} {'first off':>10} {'first on':>9} {'off (s)':>8} {'on (s)':>8} {'ratio':>6}")
    results = {}
    for name, sim in sims.items():
        r = results[name] = measure(sim, args.seeds, args.repeats)
        print(
            f"{name:5} {r['first_off']:>10.2f} {r['first_on']:>9.2f} {r['off']:>8.3f} {r['on']:>8.3f} "
            f"{r['ratio']:>6.2f}"
        )
    flow, scan = results["flow"]["ratio"], results["scan"]["ratio"]
    print(f"ratio with/without meters: flow {flow:.2f}, scan {scan:.2f}")
    return results


if __name__ == "__main__":
    main()
