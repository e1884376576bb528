"""The `attnflow` command line: verify, simulate, figures, reproduce."""

import argparse
import sys
import time
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)  # checks compare with closed forms; simulations pick their dtype


def _metadata(args: argparse.Namespace) -> dict:
    from . import __version__

    return {
        "attnflow": __version__,
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.local_devices()],
        "argv": sys.argv[1:],
        "options": {k: v for k, v in vars(args).items() if k != "func"},
    }


def _verify(args: argparse.Namespace) -> int:
    import theory

    papers = [args.paper] if args.paper else list(theory.PAPERS)
    checks = []
    for paper in papers:
        checks += theory.run_paper(
            paper, quick=args.quick, progress=lambda name: print(f"  running {name}", flush=True)
        )
    print(theory.format_table(checks))
    path = theory.write_json(checks, args.json, _metadata(args))
    print(f"wrote {path}")
    return 0 if all(c.passed for c in checks) else 1


def _simulate(args: argparse.Namespace) -> int:
    import tasks

    settings = dict(_parse_setting(s) for s in args.set)
    trajectory = tasks.simulate(
        args.task, level=args.level, num_seeds=args.seeds, settings=settings, progress=True
    )
    out = Path(args.out) / f"{args.task}_{trajectory.config['level']}_{args.seeds}seeds.npz"
    trajectory.save(out)
    reasons, counts = np.unique(trajectory.stop_reasons, return_counts=True)
    print(
        f"{trajectory.num_runs} runs; stop reasons: "
        + ", ".join(f"{r} x{n}" for r, n in zip(reasons, counts))
    )
    print(f"wrote {out}")
    return 0


def _parse_setting(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise SystemExit(f"--set expects key=value, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value.strip()


def _figures(args: argparse.Namespace) -> int:
    import figures

    if args.list:
        print("\n".join(figures.FIGURES))
        return 0
    names = list(figures.FIGURES) if args.all else args.names
    if not names:
        raise SystemExit("name at least one figure, or pass --all (see --list)")
    for name in names:
        start = time.perf_counter()
        paths = figures.make(name, Path(args.out), full=args.full)
        print(f"{name}: {', '.join(p.name for p in paths)} ({time.perf_counter() - start:.1f} s)")
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from ._report import reproduce

    return reproduce(Path(args.out), full=args.full, metadata=_metadata(args))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `attnflow`."""
    parser = argparse.ArgumentParser(prog="attnflow", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    verify = sub.add_parser("verify", help="check theorems against simulation; exit 1 if any check fails")
    verify.add_argument("--paper", help="one paper (default: all)")
    verify.add_argument("--quick", action="store_true", help="smaller simulations (seconds, not minutes)")
    verify.add_argument("--json", default="results/verify.json", help="where to write the report")
    verify.set_defaults(func=_verify)

    simulate = sub.add_parser("simulate", help="batch-simulate many seeds and write a trajectory file")
    simulate.add_argument("task", help="a task name, e.g. scan_snap")
    simulate.add_argument(
        "--level", default=None, help="simulation level (task-specific; e.g. L0, L1, L2, L3)"
    )
    simulate.add_argument("--seeds", type=int, default=16, help="number of seeds (default 16)")
    simulate.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a config field"
    )
    simulate.add_argument("--out", default="results", help="output folder")
    simulate.set_defaults(func=_simulate)

    figs = sub.add_parser("figures", help="regenerate paper figures (PNG, PDF and the data plotted)")
    figs.add_argument("names", nargs="*", help="figure names (see --list)")
    figs.add_argument("--all", action="store_true", help="every figure")
    figs.add_argument("--list", action="store_true", help="list figure names and exit")
    figs.add_argument("--out", default="results/figures", help="output folder")
    figs.add_argument(
        "--full", action="store_true", help="the papers' sizes (slow) instead of quick defaults"
    )
    figs.set_defaults(func=_figures)

    repro = sub.add_parser("reproduce", help="every check and every figure, with an index.html")
    repro.add_argument("--out", default="results", help="output folder")
    repro.add_argument("--full", action="store_true", help="the papers' sizes (slow)")
    repro.set_defaults(func=_reproduce)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `attnflow` console script."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:  # a bad config: say which field and why, without a traceback
        print(f"attnflow: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
