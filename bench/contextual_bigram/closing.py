"""SCB closing-note measurements: over 32 seeds of the default instance, the median final
distances of Algorithm 1 and of vanilla SGD at the large and the small step; and the Stage-1
success rate vs batch size for T in {50, 200}.

Run: `python bench/contextual_bigram/closing.py [--seeds 32] [--json out.json]` (float64, CPU).
"""

import argparse
import json
import time

import equinox as eqx
import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import dynamics  # noqa: E402
import tasks.contextual_bigram as cb  # noqa: E402
from theory import contextual_bigram as th  # noqa: E402

KEYS = ("dist_V", "dist_Q", "dist_V_hat", "dist_Q_hat")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--batches", type=int, nargs="*", default=[8, 16, 32, 64, 128, 256, 512, 1024])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    inst = cb.default_instance()
    cfg = cb.Algorithm1()
    keys = dynamics.seed_keys(0, args.seeds)
    result = {"K_P": float(cb.k_p(inst)), "K_Q": float(cb.k_q(inst)), "config": cfg.describe()}
    start = time.perf_counter()
    alg, _ = dynamics.run_many(eqx.Partial(cb.run_algorithm, inst, cfg=cfg), keys)
    steps = cfg.stage2_steps + cfg.every * int(np.ceil(np.median(alg["tau1"]) / cfg.every))
    rows = {
        "algorithm1 (after Stage 2)": alg["stage2_metrics"],
        "algorithm1 (final, Stage 3 = LS)": alg["final_metrics"],
    }
    for eta in (cfg.eta1, cfg.eta2):
        sgd = cb.SGD(eta=eta, batch=cfg.batch, num_steps=steps, every=cfg.every, c_f=cfg.c_f)
        out, _ = dynamics.run_many(eqx.Partial(cb.run_sgd, inst, cfg=sgd), keys)
        rows[f"vanilla SGD eta={eta}"] = out["final_metrics"]
        result[f"sgd_{eta}_diverged"] = int(np.sum(np.asarray(out["stop"]) == dynamics.StopReason.nonfinite))
    result["tau1_median"] = float(np.median(alg["tau1"]))
    result["medians"] = {name: {k: float(np.median(m[k])) for k in KEYS} for name, m in rows.items()}
    result["distance_seconds"] = time.perf_counter() - start
    print(f"K_P={result['K_P']:.4f} K_Q={result['K_Q']:.4f}; {args.seeds} seeds; SGD steps {steps}")
    print(f"{'method':<36}" + "".join(f"{k:>12}" for k in KEYS))
    for name, med in result["medians"].items():
        print(f"{name:<36}" + "".join(f"{med[k]:>12.4g}" for k in KEYS))
    start = time.perf_counter()
    table = {}
    for T in (50, 200):
        table[T] = {B: float(th.stage1_success(T, B, args.seeds).mean()) for B in args.batches}
    result["stage1_success"] = table
    result["stage1_seconds"] = time.perf_counter() - start
    print(f"Stage-1 success rate (alpha > 0 after {th.STAGE1_STEPS} steps, eta1 = 0.5)")
    print(f"{'T':<6}" + "".join(f"{'B=' + str(B):>9}" for B in args.batches))
    for T, row in table.items():
        print(f"{T:<6}" + "".join(f"{row[B]:>9.3f}" for B in args.batches))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2, default=str)


if __name__ == "__main__":
    main()
