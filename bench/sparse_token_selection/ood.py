"""Sparse token selection: OOD validation loss of stochastic vs fixed PE at each T_test (median over
seeds), and trained-FCN losses against Proposition C's width bound (closing-note measurements).

Not a timing benchmark: it prints the losses (relative to the trivial loss d/(2q)) and, per T_test,
the ratio fixed / stochastic. Defaults are the paper's lengths (T = 200, q = 3, T_test ∈ {250, 300,
350, 400}: `--num-T-tests` lengths evenly spaced up to N) with the reconstructed d = 10,
dictionary one-hot PE with N = 400 slots, Adam lr 1e-2.

    python bench/sparse_token_selection/ood.py --steps 2000 --seeds 3
    python bench/sparse_token_selection/ood.py --T 20 --N 40 --d 5 --optimizer gd --lr 1 --fcn
"""

import argparse
import time

import jax
import numpy as np

import dynamics
import tasks.sparse_token_selection as sts
from theory.sparse_token_selection import closed_forms as F


def main(argv=None) -> dict:
    """Run the measurement; **Returns:** the medians and the FCN rows as a dict."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--T", type=int, default=200)
    p.add_argument("--q", type=int, default=3)
    p.add_argument("--N", type=int, default=400)
    p.add_argument("--num-T-tests", type=int, default=4, help="test lengths evenly spaced in (T, N]")
    p.add_argument("--optimizer", choices=["gd", "adam"], default="adam")
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--num-eval", type=int, default=512)
    p.add_argument("--fcn", action="store_true", help="also train FCNs (d=4, T=8, q=2) of widths Td/8..2Td")
    args = p.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    sim = sts.Online(
        task=sts.STSConfig(d=args.d, T=args.T, q=args.q, pe_dim=args.N),
        optimizer=args.optimizer,
        lr=args.lr,
        batch_size=args.batch,
        num_steps=args.steps,
        every=args.steps,
        init="zeros" if args.optimizer == "gd" else "random",
        num_T_tests=args.num_T_tests,
        num_q_tests=0,
        num_eval=args.num_eval,
    )
    task = sim.task
    L0 = task.trivial_loss
    result = {}
    start = time.perf_counter()
    for name, fixed in (("stochastic", False), ("fixed", True)):
        keys = dynamics.seed_keys(0, args.seeds)
        runs, _ = dynamics.run_many(dynamics.with_settings(sim, {"task.fixed_pe": fixed}).run, keys)
        result[name] = np.median(runs.values["loss_T"][:, -1], axis=0) / L0
        result[name + "_train"] = float(np.median(runs.values["loss"][:, -1]) / L0)
    print(
        f"# d={task.d} T={task.T} q={task.q} N={task.pe_dim} {args.optimizer} lr={args.lr} "
        f"steps={args.steps} "
        f"batch={args.batch} seeds={args.seeds} ({time.perf_counter() - start:.0f} s)"
    )
    print(f"train loss / L0: stochastic {result['stochastic_train']:.4g}, fixed {result['fixed_train']:.4g}")
    print(f"{'T_test':>7} {'stochastic':>11} {'fixed':>9} {'fixed floor (a->inf)':>21}")
    for i, T_test in enumerate(sim.T_tests):
        floor = F.fixed_pe_floor(task.d, task.T, task.q, T_test) / L0
        print(f"{T_test:>7} {result['stochastic'][i]:>11.4g} {result['fixed'][i]:>9.4g} {floor:>21.4g}")
    for i, T_test in enumerate(sim.T_tests):
        print(f"fixed / stochastic at T_test={T_test}: {result['fixed'][i] / result['stochastic'][i]:.4g}")
    if args.fcn:
        fcn_task = sts.STSConfig(d=4, T=8, q=2, pe_sampler="onehot")
        Td = fcn_task.T * fcn_task.d
        result["fcn"] = []
        print(f"{'width':>6} {'bound':>8} trained losses (d=4, T=8, q=2, Adam 3e-3, 3000 steps)")
        for m in (Td // 8, Td // 4, Td // 2, Td, 2 * Td):
            losses, _ = sts.trained_fcn_losses(fcn_task, m, args.seeds, num_steps=3000, lr=3e-3)
            bound = F.fcn_lower_bound(fcn_task.d, fcn_task.T, fcn_task.q, m)
            result["fcn"].append((m, bound, losses))
            print(f"{m:>6} {bound:>8.4f} {np.round(losses, 4).tolist()}")
    return result


if __name__ == "__main__":
    main()
