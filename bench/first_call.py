"""The engine's runs and analyses called on arrays, outside `jit`: each as one compiled program (as
`dynamics` calls them) against the same functions run an operation at a time (every
`one_program` function of `dynamics` replaced by its `__wrapped__`, as they were before), each side
in fresh processes, float64 on a two-layer linear network of 24 parameters.

For each function and side, one process times three ways a user calls it:
- `first`: the first call;
- `same loss`: each of three later calls at new points with the same loss function (median);
- `new lambda`: each of three later calls with a loss made anew per call (median).

    python bench/first_call.py --repeats 3

prints a table of medians over the repeats (a new process each) and the ratios one program /
operation at a time, and returns them from `main(argv)` as a dict.
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FUNCTIONS = {
    "hvp": "lambda f, loss, p: f(loss, p, p)",
    "hessian_max_eigenvalue": "lambda f, loss, p: f(loss, p, num_iters=20)",
    "top_eigenpair": "lambda f, loss, p: f(loss, p, num_iters=20)",
    "hessian_spectrum": "lambda f, loss, p: f(loss, p)",
    "critical_point": "lambda f, loss, p: f(loss, p)",
    "gd_flow_gap": "lambda f, loss, p: f(loss, p, 0.1, num_steps=50, every=10)",
    "gradient_flow": "lambda f, loss, p: f(loss, p, t1=10.0, save=dynamics.Save(ts=SAVES))",
    "train": "lambda f, loss, p: f(loss, p, GD, num_steps=100)",
    "phases": "lambda f, loss, p: f(TS, 1.0 / (1.0 + (TS / (10.0 + p['w1'][0, 0])) ** 3))",
    "norm_growth": "lambda f, loss, p: f(TS, TS[:, None] * p['w1'][0])",
    "direction_convergence": (
        "lambda f, loss, p: f(LATE, np.stack([np.log(LATE), LATE * 0 + p['w1'][0, 0]], 1))"
    ),
}
"""Each function, called as `call(f, loss, point)` with `f` one side of it."""

_CHILD = """
import json, sys, time
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import dynamics
from dynamics._compiled import one_program
name, side, call = sys.argv[1], sys.argv[2], eval(sys.argv[3])
if side == "op by op":  # every one_program function of dynamics, wherever it is imported, unwrapped
    compiled_call = one_program(lambda: None).__code__
    for module in [m for n, m in list(sys.modules.items()) if n.split(".")[0] == "dynamics"]:
        for key, value in list(vars(module).items()):
            if getattr(value, "__code__", None) is compiled_call:
                setattr(module, key, value.__wrapped__)
f = getattr(dynamics, name)
TS = np.logspace(-2.0, 3.0, 101)
SAVES = np.linspace(0.0, 10.0, 11)
GD = dynamics.gd(0.1)
LATE = TS[40:]
def make_loss(scale):
    return lambda p: 0.5 * jnp.sum((p["w2"] @ p["w1"] - scale * np.eye(3)) ** 2)
def point(i):
    return {"w1": np.full((4, 3), 0.1 + 0.01 * i), "w2": np.full((3, 4), 0.1 - 0.01 * i)}
def timed(loss, p):
    start = time.perf_counter()
    jax.block_until_ready(call(f, loss, p))
    return time.perf_counter() - start
loss = make_loss(1.0)
first = timed(loss, point(0))
same = sorted(timed(loss, point(i)) for i in (1, 2, 3))[1]
new = sorted(timed(make_loss(1.0 + 0.1 * i), point(i)) for i in (4, 5, 6))[1]
print(json.dumps({"first": first, "same loss": same, "new lambda": new}))
"""

SIDES = ("one program", "op by op")
WAYS = ("first", "same loss", "new lambda")


def _child(name: str, side: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, name, side, FUNCTIONS[name]],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per function and side")
    parser.add_argument("--only", nargs="*", choices=sorted(FUNCTIONS), help="these functions alone")
    args = parser.parse_args(argv)
    results = {}
    for name in args.only or FUNCTIONS:
        runs = {side: [] for side in SIDES}
        for repeat in range(args.repeats):  # the sides alternate, order swapped on odd repeats
            for side in SIDES if repeat % 2 == 0 else SIDES[::-1]:
                runs[side].append(_child(name, side))
        results[name] = {
            side: {way: statistics.median(r[way] for r in runs[side]) for way in WAYS} for side in SIDES
        }
    print(f"{'function':24s}" + "".join(f"{way + ' (s)':>24s}" for way in WAYS))
    print(f"{'':24s}" + "".join(f"{'one / op-by-op':>24s}" for _ in WAYS))
    for name, sides in results.items():
        cells = [f"{sides['one program'][w]:.3f} / {sides['op by op'][w]:.3f}" for w in WAYS]
        print(f"{name:24s}" + "".join(f"{c:>24s}" for c in cells))
    for way in WAYS:
        one = sum(s["one program"][way] for s in results.values())
        eager = sum(s["op by op"][way] for s in results.values())
        print(
            f"{way}: all functions {one:.2f} s as one program, {eager:.2f} s an operation at a time, "
            f"ratio {one / eager:.2f}"
        )
    return results


if __name__ == "__main__":
    main()
