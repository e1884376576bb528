"""The `attnflow` command line: verify, simulate, sweep, list, figures, reproduce."""

import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)  # checks compare with closed forms; simulations pick their dtype


def provenance() -> dict:
    """What made an output: versions, backend, devices, host, date and the command line."""
    from . import __version__

    return {
        "attnflow": __version__,
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.local_devices()],
        "host": platform.node(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "argv": sys.argv[1:],
    }


def _metadata(args: argparse.Namespace) -> dict:
    return provenance() | {"options": {k: v for k, v in vars(args).items() if k != "func"}}


def _verify(args: argparse.Namespace) -> int:
    import theory

    from .papers import paper, papers

    selected = [paper(args.paper)] if args.paper else list(papers().values())
    checks = []
    for chosen in selected:
        checks += chosen.run_checks(
            quick=args.quick, progress=lambda check: print(f"  running {check}", flush=True)
        )
    print(theory.format_table(checks))
    path = theory.write_json(checks, args.json, _metadata(args))
    print(f"wrote {path}")
    return 0 if all(c.passed for c in checks) else 1


def _parse_pairs(texts: list[str], flag: str) -> dict[str, str]:
    pairs = {}
    for text in texts:
        if "=" not in text:
            raise ValueError(f"{flag} expects key=value, got {text!r}")
        key, value = text.split("=", 1)
        pairs[key.strip()] = value.strip()
    return pairs


def _simulation(args: argparse.Namespace):
    """The simulation class and its configured instance, every setting checked."""
    from .papers import load_simulation

    if ":" in args.target and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `examples.custom_model:Class` from the working directory
    cls = load_simulation(args.target, args.level)
    return cls, cls.from_settings(_parse_pairs(args.set, "--set"))


def _label(args: argparse.Namespace, cls) -> str:
    if ":" in args.target:
        return cls.__name__
    from .papers import paper

    level = args.level or paper(args.target).default_level
    return f"{args.target}_{level}"


def _config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:8]


def _check_seeds(args: argparse.Namespace) -> None:
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")


def _writable(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if not os.access(folder, os.W_OK):
        raise ValueError(f"cannot write to {folder}")


def _simulate(args: argparse.Namespace) -> int:
    import dynamics

    cls, sim = _simulation(args)
    _check_seeds(args)
    out = Path(args.out)
    _writable(out)
    start = time.perf_counter()
    trajectory = dynamics.simulate(sim, args.seeds, seed=args.seed, progress=True)
    config = trajectory.config
    path = out / f"{_label(args, cls)}_{args.seeds}seeds_{_config_hash(config)}.npz"
    config["provenance"] = provenance() | {"wall_seconds": round(time.perf_counter() - start, 3)}
    trajectory.save(path)
    reasons, counts = np.unique(trajectory.stop_reasons, return_counts=True)
    print(
        f"{trajectory.num_runs} runs; stop reasons: "
        + ", ".join(f"{r} x{n}" for r, n in zip(reasons, counts))
    )
    print(f"wrote {path}")
    return 0


def _parse_grid(cls, texts: list[str]) -> dict[str, list]:
    import dynamics

    return {
        key: [dynamics.parse_settings(cls, {key: v})[key] for v in text.split(",") if v.strip()]
        for key, text in _parse_pairs(texts, "--grid").items()
    }


def _sweep(args: argparse.Namespace) -> int:
    import dynamics

    from ._sweep_plots import plot_sweep

    cls, sim = _simulation(args)
    _check_seeds(args)
    grid = _parse_grid(cls, args.grid)
    if not grid:
        raise ValueError("name at least one --grid key=v1,v2,...")
    out = Path(args.out)
    store = out / "sweep.zarr"
    if store.exists() and not args.overwrite:
        raise ValueError(f"{store} exists; pass --overwrite to replace it, or choose another --out")
    _writable(out)
    start = time.perf_counter()
    ds = dynamics.sweep(sim, grid, num_seeds=args.seeds, seed=args.seed, progress=True)
    ds.attrs["provenance"] = json.dumps(
        provenance() | {"wall_seconds": round(time.perf_counter() - start, 3)}
    )
    dynamics.save_sweep(ds, store)
    plots = plot_sweep(ds, list(grid), out / "plots")
    points = int(np.prod([len(v) for v in grid.values()]))
    print(f"{points} grid points x {args.seeds} seeds in {time.perf_counter() - start:.1f} s")
    print(f"wrote {store} and {len(plots)} plots in {out / 'plots'}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from .papers import load_simulation, papers

    if args.target is None:
        for p in papers().values():
            print(f"{p.name}: {p.title}")
            print(f"  levels: {', '.join(p.simulations)} (default {p.default_level})")
            print(f"  checks: {len(p.checks)}; figures: {', '.join(p.figures)}")
        return 0
    if ":" in args.target:
        classes = {args.target: load_simulation(args.target)}
    else:
        from .papers import paper

        classes = paper(args.target).simulations
    for level, cls in classes.items():
        summary = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        print(f"{level}: {cls.path()}\n  {summary}")
        for info in cls.params():
            traced = ", traced" if info.traced else ""
            default = "(required)" if info.default is dataclasses.MISSING else repr(info.default)
            print(
                f"    {info.name} = {default}  ({info.type.__name__}{traced}; "
                f"{info.describe_allowed()})  {info.doc}"
            )
    return 0


def _figures(args: argparse.Namespace) -> int:
    from .papers import all_figures

    known = all_figures()
    if args.list:
        print("\n".join(known))
        return 0
    names = list(known) if args.all else args.names
    if not names:
        raise ValueError("name at least one figure, or pass --all (see --list)")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown figure(s) {', '.join(unknown)}; see attnflow figures --list")
    for name in names:
        start = time.perf_counter()
        paths = known[name](Path(args.out), args.full)
        print(f"{name}: {', '.join(p.name for p in paths)} ({time.perf_counter() - start:.1f} s)")
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from ._report import reproduce

    return reproduce(Path(args.out), full=args.full, metadata=_metadata(args))


def _add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="a paper (see `attnflow list`) or package.module:ClassName")
    parser.add_argument("--level", default=None, help="the paper's level (default: its first)")
    parser.add_argument("--seeds", type=int, default=16, help="number of seeds (default 16)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="set a field (see attnflow list)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `attnflow`."""
    parser = argparse.ArgumentParser(prog="attnflow", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    verify = sub.add_parser("verify", help="check theorems against simulation; exit 1 if any check fails")
    verify.add_argument("--paper", help="one paper (default: all)")
    verify.add_argument("--quick", action="store_true", help="smaller simulations (seconds, not minutes)")
    verify.add_argument("--json", default="results/verify.json", help="where to write the report")
    verify.set_defaults(func=_verify)

    simulate = sub.add_parser("simulate", help="run many seeds of one simulation; write a trajectory file")
    _add_target(simulate)
    simulate.add_argument("--out", default="results", help="output folder")
    simulate.set_defaults(func=_simulate)

    sweep = sub.add_parser("sweep", help="a grid of settings x seeds into one zarr store, with plots")
    _add_target(sweep)
    sweep.add_argument(
        "--grid", action="append", default=[], metavar="KEY=V1,V2,...", help="one grid axis (repeatable)"
    )
    sweep.add_argument("--out", required=True, help="output folder (sweep.zarr and plots/)")
    sweep.add_argument("--overwrite", action="store_true", help="replace an existing sweep in --out")
    sweep.set_defaults(func=_sweep)

    listing = sub.add_parser("list", help="papers and levels; with a paper, each level's fields")
    listing.add_argument("target", nargs="?", help="a paper or package.module:ClassName")
    listing.set_defaults(func=_list)

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
