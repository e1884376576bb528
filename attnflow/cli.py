"""The `attnflow` command line: verify, simulate, sweep, list, figures, reproduce."""

import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)  # checks compare with closed forms; simulations pick their dtype


def source_commit() -> str | None:
    """The git commit of the attnflow source in use (with `+dirty` when it has uncommitted
    changes), or `None` when it is not a git checkout or git is absent."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if commit.returncode != 0:
        return None
    return commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def provenance() -> dict:
    """What made an output: versions, commit, backend, devices, host, date and the command line."""
    from . import __version__

    return {
        "attnflow": __version__,
        "commit": source_commit(),
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
    import dynamics
    import theory

    from ._report import paper_checks, schedule
    from ._workers import run_pieces
    from .papers import paper, papers

    names = [paper(args.paper).name] if args.paper else list(papers())
    dynamics.prepare_file(args.json, "--json")
    order = [name for name, _ in schedule(names, ("checks",))]
    tasks = [(paper_checks, (name, args.quick)) for name in order]
    by_paper = dict(zip(order, run_pieces(tasks, args.jobs, jax.config.jax_compilation_cache_dir)))
    checks = [check for name in names for check in by_paper[name]]
    print(theory.format_table(checks))
    path = theory.write_json(checks, args.json, _metadata(args))
    print(f"wrote {path}")
    return 0 if all(c.passed for c in checks) else 1


def _parse_pairs(texts: list[str], flag: str) -> dict[str, str]:
    pairs = {}
    for text in texts:
        if "=" not in text:
            raise ValueError(f"{flag} expects key=value, got {text!r}")
        key, value = (part.strip() for part in text.split("=", 1))
        if key in pairs:
            raise ValueError(
                f"{flag} names {key!r} twice ({key}={pairs[key]} and {key}={value}); give it once"
            )
        pairs[key] = value
    return pairs


def _simulation(args: argparse.Namespace):
    """The simulation class and its configured instance, every setting checked."""
    from .papers import load_simulation

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
    import dynamics

    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if args.seed + args.seeds - 1 > dynamics.MAX_SEED:
        raise ValueError(
            f"--seed {args.seed} with --seeds {args.seeds} reaches past the largest seed, 2**31 - 1 "
            f"= {dynamics.MAX_SEED}"
        )


def _shard(args: argparse.Namespace) -> tuple[int, int]:
    """This process's shard `(i, n)`: `--shard I/N`, else a SLURM job array's task, else `(0, 1)`."""
    if args.shard:
        index, _, count = args.shard.partition("/")
        try:
            shard = (int(index), int(count))
        except ValueError:
            shard = (-1, 0)
        if not 0 <= shard[0] < shard[1]:
            raise ValueError(f"--shard must be I/N with integers 0 <= I < N, got {args.shard!r}")
        return shard
    task = os.environ.get("SLURM_ARRAY_TASK_ID")
    if task is None:
        return 0, 1
    first = int(os.environ.get("SLURM_ARRAY_TASK_MIN", "0"))
    return int(task) - first, int(os.environ["SLURM_ARRAY_TASK_COUNT"])


def _stop_summary(ds) -> str:
    """`completed x3, event:loss_below x1`: how the runs of a sweep stopped (for runs that used
    their whole step budget, the times they reached)."""
    stops, events = np.asarray(ds["stop"]).ravel(), np.asarray(ds["event"]).ravel()
    labels = [
        ds.attrs["stop_reasons"][s] + (f":{ds.attrs['event_names'][e]}" if e >= 0 else "")
        for s, e in zip(stops, events)
    ]
    names, counts = np.unique(labels, return_counts=True)
    text = ", ".join(f"{name} x{n}" for name, n in zip(names, counts))
    if "max_steps" in names:
        reached = np.asarray(ds["t_stop"]).ravel()[np.asarray(labels) == "max_steps"]
        text += (
            f" (the step budget max_steps ran out at t = {reached.min():.4g} to {reached.max():.4g}: raise "
            "--set max_steps=..., or lower t1)"
        )
    return text


class WorkFailed(Exception):
    """The work failed after it started (a full disk, a lost file); what is written stays."""


def _write_sweep(args: argparse.Namespace, sim, grid: dict, store: Path):
    """Run (or resume) this process's share of the sweep into `store`; `None` while other shards
    still have blocks to write."""
    import dynamics

    shard = _shard(args)
    if args.overwrite and shard != (0, 1):
        raise ValueError(
            "--overwrite in a shard would remove the other shards' blocks: remove the store once, "
            "before the shards start"
        )
    start = time.perf_counter()
    try:
        dynamics.sweep(
            sim,
            grid,
            num_seeds=args.seeds,
            seed=args.seed,
            progress=True,
            store=store,
            shard=shard,
            attrs={"provenance": json.dumps(provenance())},
            overwrite=args.overwrite,
            max_bytes=args.max_bytes,
        )
    except OSError as err:
        raise WorkFailed(f"{dynamics.describe_os_error(err)}; {_progress_text(store)}") from None
    except jax.errors.JaxRuntimeError as err:  # e.g. out of memory on the device
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise WorkFailed(f"the runs failed: {first}; {_progress_text(store)}") from None
    written, total = dynamics.sweep_progress(store)
    print(f"{written} of {total} blocks written to {store} ({time.perf_counter() - start:.1f} s here)")
    if written < total:
        print("the other shards' blocks are still to come; rerun without --shard once they are done")
        return None
    ds = dynamics.load_sweep(store)
    print(f"{ds.sizes[dynamics.SEED_DIM]} seeds per point; stops: {_stop_summary(ds)}")
    return ds


def _progress_text(store: Path) -> str:
    """`3 of 6 blocks done in STORE; rerun the same command to resume`, as far as it can be read."""
    import dynamics

    try:
        written, total = dynamics.sweep_progress(store)
    except (ValueError, OSError):
        return f"no block of {store} was written; rerun the same command once the cause is fixed"
    return f"{written} of {total} blocks done in {store}; rerun the same command to resume"


def _simulate(args: argparse.Namespace) -> int:
    import dynamics

    cls, sim = _simulation(args)
    _check_seeds(args)
    dynamics.prepare_folder(args.out, "--out")
    config = sim.describe() | {"num_seeds": args.seeds, "seed": args.seed}
    store = Path(args.out) / f"{_label(args, cls)}_{args.seeds}seeds_{_config_hash(config)}.zarr"
    _write_sweep(args, sim, {}, store)
    return 0


def _parse_grid(cls, texts: list[str]) -> dict[str, list]:
    import dynamics

    return {
        key: [dynamics.parse_settings(cls, {key: v})[key] for v in text.split(",") if v.strip()]
        for key, text in _parse_pairs(texts, "--grid").items()
    }


def _shard_argv(args: argparse.Namespace) -> list[str]:
    """The command line of one shard of this sweep (everything but the launch options)."""
    argv = ["sweep", args.target, "--seeds", str(args.seeds), "--seed", str(args.seed), "--out", args.out]
    argv += ["--level", args.level] if args.level else []
    for option, values in (("--set", args.set), ("--grid", args.grid)):
        argv += [text for value in values for text in (option, value)]
    return argv


def _launch(args: argparse.Namespace, store: Path) -> None:
    import dynamics

    from ._launch import launch_shards

    if args.launch < 1:
        raise ValueError(f"--launch must be >= 1, got {args.launch}")
    if args.shard:
        raise ValueError("--launch runs every shard: give --launch or --shard, not both")
    if args.overwrite:
        dynamics.remove_store(store)
    parameters = {key: _job_value(value) for key, value in _parse_pairs(args.job, "--job").items()}
    launch_shards(_shard_argv(args), args.launch, Path(args.out) / "jobs", args.cluster, parameters)


def _job_value(text: str):
    """A job parameter from text: an integer, a number, or the text itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _sweep(args: argparse.Namespace) -> int:
    import dynamics

    from ._sweep_plots import plot_sweep

    cls, sim = _simulation(args)
    _check_seeds(args)
    grid = _parse_grid(cls, args.grid)
    if not grid:
        raise ValueError("name at least one --grid key=v1,v2,...")
    out = dynamics.prepare_folder(args.out, "--out")
    if args.launch is not None:
        _launch(args, out / "sweep.zarr")
        ds = dynamics.load_sweep(out / "sweep.zarr")
    else:
        ds = _write_sweep(args, sim, grid, out / "sweep.zarr")
    if ds is not None:
        plots = plot_sweep(ds, list(grid), out / "plots")
        print(f"wrote {len(plots)} plots in {out / 'plots'}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from .papers import load_simulation, papers

    if args.target is None:
        for p in papers().values():
            print(f"{p.name}: {p.title}")
            print(f"  levels: {', '.join(p.simulations)} (default {p.default_level})")
            print(f"  checks: {len(p.checks)}; figures: {', '.join(p.figures)}")
            if p.info.data is not None:
                print(f"  --data: {p.info.data.describe}")
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


def _use_data(directory: str | None) -> None:
    """`--data DIR`: check, before any work, that DIR holds what each paper with a data option
    reads (`tasks.PaperInfo.data`), and name it to them in the option's environment variable,
    which worker processes inherit."""
    if directory is None:
        return
    from .papers import papers

    options = [p.info.data for p in papers().values() if p.info.data is not None]
    if not options:
        raise ValueError("--data: no paper reads a data directory")
    for option in options:
        try:
            option.use(directory)
        except ValueError as err:
            raise ValueError(f"--data: {err}") from None


def _figures(args: argparse.Namespace) -> int:
    import dynamics

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
    _use_data(args.data)
    out = dynamics.prepare_folder(args.out, "--out")
    for name in names:
        start = time.perf_counter()
        paths = known[name](out, args.full)
        print(f"{name}: {', '.join(p.name for p in paths)} ({time.perf_counter() - start:.1f} s)")
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    import dynamics

    from ._report import reproduce

    _use_data(args.data)
    out = dynamics.prepare_folder(args.out, "--out")
    dynamics.prepare_folder(out / "figures", "the figures' folder")
    return reproduce(out, full=args.full, metadata=_metadata(args), jobs=args.jobs)


def _check(args: argparse.Namespace) -> int:
    from ._store_check import check

    return check(Path(args.store), repair=args.repair)


def _add_data(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        metavar="DIR",
        help="a data directory for the papers that read one (`attnflow list` says which and what it "
        "must hold; default: their bundled data)",
    )


def _add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="a paper (see `attnflow list`) or package.module:ClassName")
    parser.add_argument("--level", default=None, help="the paper's level (default: its first)")
    parser.add_argument("--seeds", type=int, default=16, help="number of seeds (default 16)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="set a field (see attnflow list)"
    )


def _add_jobs(parser: argparse.ArgumentParser) -> None:
    from ._workers import default_jobs

    parser.add_argument(
        "--jobs",
        type=int,
        default=default_jobs(),
        help="papers run side by side in this many worker processes (default: the CPU cores, "
        f"{default_jobs()} here; 1 runs everything in this process)",
    )


def _add_store_options(parser: argparse.ArgumentParser) -> None:
    import dynamics

    parser.add_argument(
        "--overwrite", action="store_true", help="replace the store instead of resuming it (default: resume)"
    )
    parser.add_argument(
        "--max-bytes",
        type=_size,
        default=dynamics.DEFAULT_MAX_BYTES,
        metavar="SIZE",
        help="refuse results larger than this, e.g. 100G or 64GiB (default 16GiB)",
    )
    parser.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only shard I of N (default: SLURM_ARRAY_TASK_ID of SLURM_ARRAY_TASK_COUNT when set)",
    )


def _size(text: str) -> int:
    import dynamics

    try:
        return dynamics.parse_bytes(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `attnflow`."""
    parser = argparse.ArgumentParser(prog="attnflow", description=__doc__)
    parser.add_argument(
        "--no-compile-cache",
        action="store_true",
        help="compile everything afresh (default: reuse compiled programs from earlier runs, kept in "
        "$ATTNFLOW_CACHE_DIR or ~/.cache/attnflow/jax)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    verify = sub.add_parser("verify", help="check theorems against simulation; exit 1 if any check fails")
    verify.add_argument("--paper", help="one paper (default: all)")
    verify.add_argument("--quick", action="store_true", help="smaller simulations (seconds, not minutes)")
    verify.add_argument("--json", default="results/verify.json", help="where to write the report")
    _add_jobs(verify)
    verify.set_defaults(func=_verify)

    simulate = sub.add_parser("simulate", help="run many seeds of one simulation into a zarr store")
    _add_target(simulate)
    simulate.add_argument("--out", default="results", help="output folder")
    _add_store_options(simulate)
    simulate.set_defaults(func=_simulate)

    sweep = sub.add_parser("sweep", help="a grid of settings x seeds into one zarr store, with plots")
    _add_target(sweep)
    sweep.add_argument(
        "--grid", action="append", default=[], metavar="KEY=V1,V2,...", help="one grid axis (repeatable)"
    )
    sweep.add_argument("--out", required=True, help="output folder (sweep.zarr and plots/)")
    _add_store_options(sweep)
    sweep.add_argument(
        "--launch", type=int, default=None, metavar="N", help="submit N shard jobs (submitit), wait for them"
    )
    sweep.add_argument(
        "--cluster",
        default="auto",
        choices=("auto", "slurm", "local"),
        help="where --launch runs the jobs (auto: SLURM when present, else local processes)",
    )
    sweep.add_argument(
        "--job",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a submitit job parameter for --launch, e.g. slurm_partition=gpu or timeout_min=60",
    )
    sweep.set_defaults(func=_sweep)

    checking = sub.add_parser(
        "check",
        help="check a store's files against their checksums: complete, incomplete, damaged or foreign",
    )
    checking.add_argument("store", help="a store written by simulate, sweep or dynamics.sweep")
    checking.add_argument(
        "--repair", action="store_true", help="run the missing and damaged blocks again (the same code only)"
    )
    checking.set_defaults(func=_check)

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
    _add_data(figs)
    figs.set_defaults(func=_figures)

    repro = sub.add_parser("reproduce", help="every check and every figure, with an index.html")
    repro.add_argument("--out", default="results", help="output folder")
    repro.add_argument("--full", action="store_true", help="the papers' sizes (slow)")
    _add_jobs(repro)
    _add_data(repro)
    repro.set_defaults(func=_reproduce)
    return parser


def compile_cache_dir() -> Path:
    """Where the command line keeps compiled programs between runs: `$ATTNFLOW_CACHE_DIR`, else
    `$XDG_CACHE_HOME/attnflow/jax`, else `~/.cache/attnflow/jax`."""
    if "ATTNFLOW_CACHE_DIR" in os.environ:
        return Path(os.environ["ATTNFLOW_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnflow" / "jax"


def _use_compile_cache(directory: str | os.PathLike) -> None:
    """JAX's persistent compilation cache in `directory` (the command line's is
    [`compile_cache_dir`][]), for every program that took more than a tenth of a second to
    compile: a second run of a command skips those compilations."""
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.1)


BACKEND_OPTIMIZATION = "--xla_backend_optimization_level=2"
"""The XLA backend optimisation level of the command line's programs (XLA's default is 3). On a
2-core CPU, `attnflow --no-compile-cache reproduce` takes 297 s instead of 344 s, `attnflow verify
--quick --jobs 1` on one core 211 s instead of 242 s, and the full Fig. 6 sweep 46 s instead of
50 s: compiling is faster and the programs run as fast. The numbers agree with level 3 to
rounding. A level given in `XLA_FLAGS` is kept."""


def _use_backend_optimization() -> None:
    """Add [`BACKEND_OPTIMIZATION`][] to `XLA_FLAGS` unless it names a level; read when JAX first
    computes, so it acts in a fresh process (the console script, the workers it spawns)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {BACKEND_OPTIMIZATION}".strip()


EXIT_CODES = {
    0: "done (verify, reproduce: every check passed or is an expected deviation; check: the store is whole)",
    1: "a check failed (verify, reproduce), or the store is incomplete, damaged or foreign (check)",
    2: "refused before any work: a bad setting, path, size, grid or store (the message says which)",
    3: "failed during the work (a full disk, a lost file): what was written stays; rerun to resume",
    130: "interrupted (Ctrl-C), 143: terminated (SIGTERM): what was written stays; rerun to resume",
}
"""The exit status of every command."""


def _terminate(signum, frame) -> None:
    """SIGTERM ends the command like Ctrl-C does: temporary files are removed on the way out."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `attnflow` console script; returns an exit status ([`EXIT_CODES`][])."""
    args = build_parser().parse_args(argv)
    _use_backend_optimization()
    if not args.no_compile_cache:
        _use_compile_cache(compile_cache_dir())
    import dynamics

    previous = signal.signal(signal.SIGTERM, _terminate) if _in_main_thread() else None
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.func(args)
    except ValueError as err:  # a bad input: say which and why, without a traceback
        print(f"attnflow: error: {err}", file=sys.stderr)
        return 2
    except WorkFailed as err:
        print(f"attnflow: error: {err}", file=sys.stderr)
        return 3
    except OSError as err:
        print(f"attnflow: error: {dynamics.describe_os_error(err)}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("attnflow: interrupted; what was written stays (rerun to resume)", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line, `attnflow: warning: ...`, without the source line that raised it."""
    print(f"attnflow: warning: {message}", file=sys.stderr if file is None else file)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    sys.exit(main())
