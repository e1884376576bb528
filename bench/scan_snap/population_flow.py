"""L1 population gradient flow (Lemma 2's T → ∞ loss) on Syn-Medium: adaptive Tsit5 vs fixed-step explicit
Euler (= full-batch GD), at equal accuracy.

- **adaptive**: `dynamics.gradient_flow` (Diffrax Tsit5, PID controller) at rtol = atol =
  `--rtol` (default 1e-6), from t = 0 to `--t1` (default 1e4).
- **Euler**: `dynamics.train(loss, model, dynamics.gd(rates · dt), num_steps = t1 / dt)`, i.e.
  explicit Euler on the same ODE. The step is found by halving from `--dt0` (default 1): the
  largest dt = dt0 / 2^k whose final parameters are at least as accurate as the adaptive run's.
  By default the search jumps over the halvings that the first-order error law (error ∝ dt,
  fitted on the last two dt's) predicts to fail, then confirms the boundary: the chosen dt
  passes and 2·dt (when ≤ dt0) fails, both measured. `--no-jump` halves one step at a time.
- **reference**: Dopri8 at rtol = atol = `--ref-tol` (default 1e-12); its own uncertainty is
  estimated as its distance to Tsit5 at the same tolerance and printed.

Accuracy = max |θ(t1) − θ_ref(t1)| over every entry of the final Y and Z (max abs error of the
final parameters). The relative error of the final population loss is printed for information.

Gradient evaluations: Euler = its number of steps (one ∇L per step). Adaptive = the number of
times ∇L actually ran inside the solve, counted by a `jax.debug.callback` in the loss of an
untimed, instrumented copy of the run (so rejected steps and the initial step-size selection
count); Tsit5 is FSAL, so each attempted step costs 6 new evaluations, and the count is
6 × (accepted + rejected steps) + 1 (the first-same-as-last value at t0).

Wall time: median over `--repeats` interleaved repeats (adaptive and Euler alternately) of the
time per jitted call, compiled before timing (compile excluded); a repeat averages as many
back-to-back calls as last ~0.2 s, so the millisecond-long adaptive solve is not timer noise.

Run `python bench/scan_snap/population_flow.py --help` for the flags.
"""

import argparse
import math
import statistics
import time
from collections.abc import Callable, Sequence

import diffrax
import jax
import jax.numpy as jnp

import dynamics
from tasks.scan_snap import Dataset2, YZModel, model_rates, population_loss


def max_abs_error(model: YZModel, reference: YZModel) -> float:
    """max |θ − θ_ref| over every entry of Y and Z."""
    return float(max(jnp.max(jnp.abs(model.Y - reference.Y)), jnp.max(jnp.abs(model.Z - reference.Z))))


def count_gradient_evaluations(run: Callable[[Callable, YZModel], dynamics.Run], loss, model: YZModel) -> int:
    """How many times `run(loss, model)` evaluates ∇`loss` (one `jax.debug.callback` per forward
    pass of the loss, which `jax.grad` runs once per gradient). `run` must use `loss` only
    through its gradient (save functions should use an uninstrumented loss)."""
    count = [0]

    def bump():
        count[0] += 1

    def counted(m):
        jax.debug.callback(bump)
        return loss(m)

    result = jax.jit(lambda m: run(counted, m).final)(model)
    jax.block_until_ready(result)
    jax.effects_barrier()
    return count[0]


def _calls_per_timing(fn, model, min_seconds: float = 0.2, known_seconds: float = 0.0) -> int:
    """How many back-to-back calls make one timing sample last about `min_seconds` (a
    millisecond-long solve is timed over many calls, a long one over one). A call already
    known to take longer than a few seconds is not run again to find out."""
    if known_seconds > 10 * min_seconds:
        return 1
    start = time.perf_counter()
    jax.block_until_ready(fn(model))
    return max(1, math.ceil(min_seconds / max(time.perf_counter() - start, 1e-9)))


def _time_per_call(fn, model, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        jax.block_until_ready(fn(model))
    return (time.perf_counter() - start) / calls


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="L1 population flow: adaptive Tsit5 (dynamics.gradient_flow) vs explicit Euler = GD.",
    )
    parser.add_argument("--num-last", type=int, default=1, help="Syn-Medium vocabulary (default 1: M = 33)")
    parser.add_argument(
        "--init",
        choices=("zeros", "uniform"),
        default="zeros",
        help="Y = Z = 0, or U(-1/sqrt M, 1/sqrt M) (default zeros)",
    )
    parser.add_argument("--init-seed", type=int, default=0, help="PRNG seed of the uniform init")
    parser.add_argument("--eta-y", type=float, default=1.0)
    parser.add_argument("--eta-z", type=float, default=1.0)
    parser.add_argument("--t1", type=float, default=1e4, help="end time (default 1e4)")
    parser.add_argument("--rtol", type=float, default=1e-6, help="adaptive run's rtol (default 1e-6)")
    parser.add_argument("--atol", type=float, default=None, help="adaptive run's atol (default = rtol)")
    parser.add_argument("--ref-tol", type=float, default=1e-12, help="reference rtol = atol (default 1e-12)")
    parser.add_argument("--dt0", type=float, default=1.0, help="largest Euler step tried (default 1)")
    parser.add_argument(
        "--max-euler-steps",
        type=int,
        default=2**26,
        help="give up halving beyond this many Euler steps and extrapolate (default 2^26)",
    )
    parser.add_argument("--no-jump", action="store_true", help="halve dt one step at a time")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats; medians reported (default 3)")
    args = parser.parse_args(argv)
    if args.atol is None:
        args.atol = args.rtol
    if args.t1 <= 0 or args.dt0 <= 0 or args.repeats < 1 or args.max_euler_steps < 1:
        parser.error("--t1, --dt0 must be > 0 and --repeats, --max-euler-steps >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the benchmark, print the tables, return the numbers."""
    args = parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64
    dataset = Dataset2.syn_medium(args.num_last)
    arrays = dataset.build().arrays(dtype)
    M = dataset.M
    if args.init == "zeros":
        model0 = YZModel.zeros(M, dtype)
    else:
        model0 = YZModel.uniform(jax.random.PRNGKey(args.init_seed), M, dtype)
    rates = model_rates(args.eta_y, args.eta_z)
    t1 = args.t1

    def loss(m):
        return population_loss(m, arrays)

    def flow(solver, stepsize_controller, max_steps=100_000):
        def run(loss_fn, m):
            return dynamics.gradient_flow(
                loss_fn,
                m,
                rates=rates,
                t1=t1,
                solver=solver,
                stepsize_controller=stepsize_controller,
                save=dynamics.Save(fn=lambda t, y, args: loss(y)),
                max_steps=max_steps,
            )

        return run

    def euler(num_steps):
        dt = t1 / num_steps
        step_rates = model_rates(args.eta_y * dt, args.eta_z * dt)

        def run(loss_fn, m):
            return dynamics.train(
                loss_fn,
                m,
                dynamics.gd(step_rates),
                num_steps=num_steps,
                save=dynamics.Save(every=num_steps, fn=lambda step, p, args: loss(p)),
            )

        return run

    def finish(run_fn, what):
        """Jit `run_fn` on the real loss, run once (compiles), check it completed."""
        fn = jax.jit(lambda m: run_fn(loss, m))
        out = fn(model0)
        if dynamics.stop_reason(out.stop, out.event, ()) != "completed":
            raise RuntimeError(f"{what} stopped early: {dynamics.stop_reason(out.stop, out.event, ())}")
        return fn, out

    print(
        f"L1 population flow, Syn-Medium num_last={args.num_last} (M={M}, K={dataset.K}), init {args.init}, "
        f"eta_Y={args.eta_y}, eta_Z={args.eta_z}, t1={t1:g}, float64"
    )
    print("accuracy = max |theta(t1) - theta_ref(t1)| over all entries of the final Y and Z")

    # Reference, and its own uncertainty.
    reference_controller = diffrax.PIDController(rtol=args.ref_tol, atol=args.ref_tol)
    _, ref = finish(flow(diffrax.Dopri8(), reference_controller, 10**6), "reference (Dopri8)")
    _, ref_check = finish(flow(diffrax.Tsit5(), reference_controller, 10**6), "reference check (Tsit5)")
    reference = ref.final
    ref_uncertainty = max_abs_error(ref_check.final, reference)
    ref_loss = float(ref.values[-1])

    def rel_loss_error(run):
        return abs(float(run.values[-1]) - ref_loss) / abs(ref_loss)

    print(
        f"reference: Dopri8 rtol=atol={args.ref_tol:g}; |Dopri8 - Tsit5| at that tolerance = "
        f"{ref_uncertainty:.1e}; final population loss {ref_loss:.6e}"
    )

    # Adaptive run.
    adaptive_run = flow(diffrax.Tsit5(), diffrax.PIDController(rtol=args.rtol, atol=args.atol))
    adaptive_fn, adaptive = finish(adaptive_run, "adaptive run")
    target = max_abs_error(adaptive.final, reference)
    adaptive_evals = count_gradient_evaluations(adaptive_run, loss, model0)
    if target < 10 * ref_uncertainty:
        print(
            f"warning: the adaptive error {target:.1e} is within 10x of the reference's own "
            f"uncertainty {ref_uncertainty:.1e}; tighten --ref-tol"
        )

    # Euler step search.
    n0 = max(1, round(t1 / args.dt0))
    errors: dict[int, float] = {}
    runs: dict[int, tuple] = {}
    seconds: dict[int, float] = {}

    def evaluate(n):
        if n not in errors:
            fn = jax.jit(lambda m: euler(n)(loss, m))
            start = time.perf_counter()
            out = jax.block_until_ready(fn(model0))
            seconds[n] = time.perf_counter() - start  # compile included
            err = max_abs_error(out.final, reference)
            if int(out.stop) != dynamics.StopReason.completed:
                err = math.inf  # diverged: train froze the run at its last finite parameters
            errors[n] = err
            runs[n] = (fn, out)
            print(
                f"  Euler dt={t1 / n:<10.4g} steps={n:<10d} error={err:.3e} "
                f"{'meets' if err <= target else 'misses'} target"
            )
        return errors[n]

    print(f"Euler step search (target = adaptive error {target:.3e}):")
    n = n0
    extrapolated_steps = None
    while True:
        if evaluate(n) <= target:
            break
        if 2 * n > args.max_euler_steps:
            extrapolated_steps = n
            break
        nxt = 2 * n
        half = n // 2
        if not args.no_jump and half >= n0 and half in errors and math.isfinite(errors[half]):
            slope = errors[half] / errors[n]  # 2 in the first-order regime
            if 1.6 < slope < 2.5:
                predicted = n * errors[n] / target
                while 2 * nxt <= predicted and 2 * nxt <= args.max_euler_steps:
                    nxt *= 2
        n = nxt
    if extrapolated_steps is None:
        # Confirm the boundary: the next larger dt (half the steps) must miss the target.
        while n // 2 >= n0 and n % 2 == 0 and evaluate(n // 2) <= target:
            n //= 2
        chosen = n
        needed = n
        print(
            f"  (powers-of-two granularity: first order, error ∝ dt, puts the step that just meets "
            f"the target at about {math.ceil(n * errors[n] / target)} steps)"
        )
    else:
        chosen = n
        if not math.isfinite(errors[n]):
            raise RuntimeError(f"Euler diverged at dt = {t1 / n:g}, the smallest step allowed")
        needed = math.ceil(n * errors[n] / target)  # first order: error ∝ dt
        print(
            f"  stopped at --max-euler-steps={args.max_euler_steps}; first-order EXTRAPOLATION: "
            f"about {needed} steps (dt ≈ {t1 / needed:.3g}) would reach the target"
        )
    euler_fn, euler_out = runs[chosen]

    # Timing, interleaved; each sample is the mean over enough back-to-back calls to last ~0.2 s.
    sides = [
        (adaptive_fn, _calls_per_timing(adaptive_fn, model0), []),
        (euler_fn, _calls_per_timing(euler_fn, model0, known_seconds=seconds[chosen]), []),
    ]
    for repeat in range(args.repeats):
        for fn, calls, samples in sides if repeat % 2 == 0 else sides[::-1]:
            samples.append(_time_per_call(fn, model0, calls))
    (_, adaptive_calls, adaptive_times), (_, _, euler_times) = sides
    adaptive_s = statistics.median(adaptive_times)
    euler_s = statistics.median(euler_times) * needed / chosen

    euler_err = errors[chosen]
    rows = [
        (
            "adaptive Tsit5",
            f"rtol={args.rtol:g} atol={args.atol:g}",
            adaptive_evals,
            target,
            rel_loss_error(adaptive),
            adaptive_s,
        ),
        (
            "Euler (= GD)",
            f"dt={t1 / chosen:.4g}",
            chosen,
            euler_err,
            rel_loss_error(euler_out),
            statistics.median(euler_times),
        ),
    ]
    if extrapolated_steps is not None:
        rows.append(("Euler, extrapolated", f"dt≈{t1 / needed:.3g}", needed, target, float("nan"), euler_s))
    header = (
        f"{'method':<20} {'step / tolerance':<26} {'grad evals':>11} {'max|dθ|':>9} "
        f"{'loss rel err':>12} {'wall s':>10}"
    )
    print(header)
    print("-" * len(header))
    for name, setting, evals, err, lerr, seconds in rows:
        print(f"{name:<20} {setting:<26} {evals:>11d} {err:>9.2e} {lerr:>12.2e} {seconds:>10.4g}")
    print(
        f"adaptive gradient evaluations counted by a jax.debug.callback in the loss: {adaptive_evals} "
        f"= 6 x {(adaptive_evals - 1) / 6:g} attempted Tsit5 steps + 1 (FSAL: 6 new stages per step, "
        f"plus the first stage at t0)"
    )
    print(
        f"wall times: median of {args.repeats} interleaved repeats, compile excluded "
        f"(adaptive: each repeat = mean of {adaptive_calls} back-to-back calls)"
    )
    if extrapolated_steps is not None:
        print(
            "Euler numbers EXTRAPOLATED to the target accuracy from the last dt tried "
            "(steps x error / target; wall time scaled by steps)"
        )
    ratio_evals = needed / adaptive_evals
    ratio_time = euler_s / adaptive_s
    print(f"ratio Euler/adaptive (gradient evaluations): {ratio_evals:.4g}")
    print(f"ratio Euler/adaptive (wall time): {ratio_time:.4g}")
    return dict(
        ratio_evals=ratio_evals,
        ratio_time=ratio_time,
        adaptive_evals=adaptive_evals,
        adaptive_error=target,
        euler_steps=chosen,
        euler_steps_needed=needed,
        euler_error=euler_err,
        euler_dt=t1 / chosen,
        adaptive_s=adaptive_s,
        euler_s=euler_s,
        extrapolated=extrapolated_steps is not None,
        reference_uncertainty=ref_uncertainty,
        errors=dict(errors),
        adaptive_final=adaptive.final,
        euler_final=euler_out.final,
        reference_final=reference,
    )


if __name__ == "__main__":
    main()
