"""The `attnflow` command line: it parses and dispatches to the commands (`attnflow._commands`):
verify, simulate, sweep, check, list, figures, reproduce. Each command's `--help` ends with
examples ([`EXAMPLES`][])."""

import _thread
import argparse
import functools
import os
import re
import signal
import sys
import textwrap
import threading
import time
import warnings

from . import _catalog, _listing, _names, _runtime


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
    parser.add_argument(
        "--jobs",
        type=int,
        default=_runtime.default_jobs(),
        help="papers run side by side in this many worker processes, at most one per CPU core "
        f"(default: the cores, {_runtime.default_jobs()} here; 1 runs everything in this process)",
    )


def _add_analyse(parser: argparse.ArgumentParser, store: str, plots: str) -> None:
    parser.add_argument(
        "--analyse",
        default=None,
        metavar="NAMES",
        help=f"analyses of every run, comma-separated, added to {store}, variables NAME.*, "
        f"checksummed) with {plots}: phases (the plateaus of each run's loss, with its saved grad_norm "
        "where it saves one); saddles (with phases: the state each run saved on each plateau "
        "polished to its critical point, float64: status, loss, index, zero eigenvalues, the "
        "distance moved, the escape direction and its overlap with the run's escape; kept in "
        "OUT/saddles.kept; needs a landscape that says where the runs save their parameters); "
        "critical_point (each "
        "final state polished to the critical point near it, float64: its status, loss, gradient "
        "norm, index, zero eigenvalues and extreme Hessian eigenvalues; each run's kept in "
        "OUT/critical_point.kept as it ends, so a rerun polishes only the runs not kept); sharpness "
        "(the top Hessian eigenvalue at each final state, beside 2/eta for a level with a step "
        "size); the last two need a level that declares its landscape. Each takes its settings "
        "after colons, e.g. phases:min_depth=2:leave=0.1 (those of dynamics.landscape.sweep_phases, "
        "sweep_saddles, sweep_critical_points, sweep_sharpness)",
    )


def _add_store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the store instead of resuming it (default: resume)"
    )
    parser.add_argument(
        "--max-bytes",
        type=_size,
        default=None,
        metavar="SIZE",
        help="refuse results larger than this, e.g. 100G or 64GiB (default 16GiB)",
    )
    parser.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only shard I of N (default: SLURM_ARRAY_TASK_ID of SLURM_ARRAY_TASK_COUNT when set)",
    )


def _add_full(parser: argparse.ArgumentParser, checks: bool = True) -> None:
    same = " (the same tolerances)" if checks else ""
    parser.add_argument(
        "--full",
        action="store_true",
        help=f"the papers' sizes (minutes to hours) instead of the quick ones{same}",
    )


def _size(text: str) -> int:
    import dynamics

    try:
        return dynamics.store.parse_bytes(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


DESCRIPTION = (
    "Simulate how one-layer transformers learn: the tasks and models of five theory papers, exact "
    "gradient flow and discrete training of many seeds at once, every theorem checked against "
    "simulation and every figure regenerated."
)

EXAMPLES = {
    "attnflow": [
        "attnflow list",
        "attnflow verify --paper ntp_partial_order",
        "attnflow sweep scan_snap --level L1 --grid eta_z=0.5,1,2 --seeds 64 --out runs/l1",
        "attnflow reproduce --out results",
    ],
    "verify": [
        "attnflow verify",
        "attnflow verify --paper sparse_token_selection --full --json full.json",
        "attnflow verify --check lemma2_rate --check lemma5_discrete",
    ],
    "simulate": [
        "attnflow simulate ntp_partial_order --seeds 64 --set num_steps2=5000",
        "attnflow simulate scan_snap --level L1 --set init=uniform --set t1=50 --out runs",
    ],
    "sweep": [
        "attnflow sweep scan_snap --level L0_outcome --grid task.num_last=1,3,5,10 --grid eta_z=0.5,1,2,3 "
        "--grid ratio=1,2,5,10 --seed 1 --seeds 10 --out fig6",
        "attnflow sweep sparse_token_selection --grid t1=1000,10000 --analyse phases,sharpness --out sts",
        "attnflow sweep examples.custom_model:Retrieval --grid eta_w=0.5,2 --grid tokens=4,8 --out mine",
        "attnflow sweep scan_snap --level L1 --grid eta_z=0.5,1,2,4 --seeds 4096 --out big --launch 8",
    ],
    "check": ["attnflow check fig6/sweep.zarr", "attnflow check fig6/sweep.zarr --repair"],
    "list": [
        "attnflow list",
        "attnflow list contextual_bigram",
        "attnflow list examples.custom_model:Retrieval",
    ],
    "figures": [
        "attnflow figures --list",
        "attnflow figures scan_snap_fig6 decision_lists_time_vs_bound --out figs",
        "attnflow figures --all --full --jobs 2",
    ],
    "reproduce": [
        "attnflow reproduce",
        "attnflow reproduce --full --out results-full",
        "attnflow reproduce --paper scan_snap --out results-scan-snap",
    ],
}
"""Command -> example command lines, printed at the end of its `--help` (`attnflow`: the whole
program's). Each is parsed, and the papers, levels and figures it names looked up, by the tests."""


def _wrapped(example: str, width: int = 76) -> str:
    """`example` over lines ending in `\\` where it is longer than `width`, each option with its
    values on one line."""
    lines = [""]
    for part in re.split(r" (?=--)", example):
        if lines[-1] and len(lines[-1]) + 1 + len(part) > width:
            lines.append("")
        lines[-1] = f"{lines[-1]} {part}".strip()
    return " \\\n      ".join(lines)


def _epilog(command: str) -> str:
    """`examples:` and the examples of `command`."""
    return "examples:\n" + "\n".join(f"  {_wrapped(example)}" for example in EXAMPLES[command])


def _command(sub, name: str, summary: str) -> argparse.ArgumentParser:
    """The subcommand `name`: `summary` in the command list and atop its `--help`, its examples at
    the end."""
    return sub.add_parser(
        name,
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        epilog=_epilog(name),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `attnflow`."""
    parser = argparse.ArgumentParser(
        prog="attnflow",
        description=textwrap.fill(DESCRIPTION, 80),
        epilog=_epilog("attnflow")
        + "\n\nexit status:\n"
        + "\n".join(f"  {code}: {meaning}" for code, meaning in EXIT_CODES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--no-compile-cache",
        action="store_true",
        help="compile everything afresh (default: reuse compiled programs from earlier runs, kept in "
        "$ATTNFLOW_CACHE_DIR or ~/.cache/attnflow/jax)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    verify = _command(sub, "verify", "check theorems against simulation; exit 1 if any check fails")
    verify.add_argument("--paper", help="one paper (default: all)")
    verify.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="NAME",
        help="only this check (repeatable; attnflow list PAPER names each paper's checks)",
    )
    _add_full(verify)
    verify.add_argument(
        "--json",
        default="results/verify.json",
        help="where to write the report (default: %(default)s); until it is written, each check is kept "
        "beside it as it ends (results/verify.kept), and a command stopped half-way and made again runs "
        "only the checks left",
    )
    _add_jobs(verify)
    verify.set_defaults(func="verify")

    simulate = _command(sub, "simulate", "run many seeds of one simulation into a zarr store")
    _add_target(simulate)
    simulate.add_argument(
        "--out",
        default="results",
        help="output folder, for a store named after the level, seeds and settings (default: %(default)s)",
    )
    _add_store_options(simulate)
    _add_analyse(simulate, "the store (OUT/NAME.zarr", "their plots in OUT/NAME.plots/")
    simulate.set_defaults(func="simulate")

    sweep = _command(sub, "sweep", "a grid of settings x seeds into one zarr store, with plots")
    _add_target(sweep)
    sweep.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help="one grid axis (repeatable; none: the one setting given, as simulate, into OUT)",
    )
    sweep.add_argument("--out", required=True, help="output folder (sweep.zarr and plots/)")
    _add_store_options(sweep)
    _add_analyse(sweep, "the store (OUT/sweep.zarr", "their plots in OUT/plots/")
    sweep.add_argument(
        "--refine",
        default=None,
        metavar="OUTCOME",
        help="locate where a per-run outcome changes over the one or two --grid axes: after their "
        "values, add a point inside each interval whose neighbours' majority outcomes differ (over two "
        "axes: split each cell whose corners differ in four), round after round (each round one "
        "compiled call; kept in OUT/rounds/ and resumed), until --budget points; "
        "OUTCOME is 'diverged', or NAME>VALUE / NAME<VALUE on a final scalar or a saved series' last "
        "value (e.g. growth>1); needs --seeds >= 3 (dynamics.landscape.refine_sweep)",
    )
    sweep.add_argument(
        "--budget",
        type=int,
        default=20,
        metavar="N",
        help="with --refine: the most points swept (default 20)",
    )
    sweep.add_argument(
        "--refine-scale",
        choices=("log", "linear"),
        default="log",
        help="with --refine: split an interval (a cell) at its geometric mean (log, default) or its midpoint",
    )
    sweep.add_argument(
        "--launch", type=int, default=None, metavar="N", help="submit N shard jobs (submitit), wait for them"
    )
    sweep.add_argument(
        "--cluster",
        choices=("auto", "slurm", "local"),
        help="where --launch runs the jobs (default auto: SLURM when present, else local processes)",
    )
    sweep.add_argument(
        "--job",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a submitit job parameter for --launch, e.g. slurm_partition=gpu or timeout_min=60",
    )
    sweep.set_defaults(func="sweep")

    checking = _command(
        sub,
        "check",
        "check a store's files against their checksums: complete, incomplete, damaged or foreign",
    )
    checking.add_argument("store", help="a store written by simulate, sweep or dynamics.sweep")
    checking.add_argument(
        "--repair", action="store_true", help="run the missing and damaged blocks again (the same code only)"
    )
    checking.set_defaults(func="check_store")

    listing = _command(sub, "list", "papers and levels; with a paper, each level's fields")
    listing.add_argument("target", nargs="?", help="a paper or package.module:ClassName")
    listing.set_defaults(func="list")

    figs = _command(sub, "figures", "regenerate paper figures (PNG, PDF and the data plotted)")
    figs.add_argument("names", nargs="*", help="figure names (see --list)")
    figs.add_argument("--all", action="store_true", help="every figure")
    figs.add_argument("--list", action="store_true", help="list figure names and exit")
    figs.add_argument("--out", default="results/figures", help="output folder (default: %(default)s)")
    _add_full(figs, checks=False)
    _add_jobs(figs)
    _add_data(figs)
    figs.set_defaults(func="figures")

    repro = _command(sub, "reproduce", "every check and every figure, with an index.html")
    repro.add_argument(
        "--out",
        default="results",
        help="output folder: index.html, verify.json and figures/ (default: %(default)s)",
    )
    repro.add_argument(
        "--paper",
        action="append",
        default=[],
        metavar="NAME",
        help="only this paper's checks and figures (repeatable; default: every paper)",
    )
    _add_full(repro)
    repro.add_argument(
        "--docs",
        default=None,
        metavar="SITE",
        help="link each check and figure to its entry in the documentation: the site's address, or "
        "the folder of a built site (e.g. site)",
    )
    _add_jobs(repro)
    _add_data(repro)
    repro.set_defaults(func="reproduce")
    return parser


EXIT_CODES = {
    0: "done (verify, reproduce: every check passed or is an expected deviation; check: the store is whole)",
    1: "a check failed (verify, reproduce), or the store is incomplete, damaged or foreign (check)",
    2: "refused before any work: a bad setting, path, size, grid or store (the message says which)",
    3: "failed during the work (a full disk, a lost file): what was written stays; rerun to resume",
    130: "interrupted (Ctrl-C), 143: terminated (SIGTERM): what was written stays; rerun to resume",
    141: "the reader of the output went away (a pipe closed, as `| head` does): ended quietly",
}
"""The exit status of every command."""


class _Terminated(BaseException):
    """Raised by SIGTERM: the command unwinds (removing its temporary files and releasing its
    locks) and the process then ends."""


def _terminate(signum, frame) -> None:
    raise _Terminated


def _redeliver(previous_hook, unraisable) -> None:
    """A Ctrl-C or SIGTERM whose exception was raised inside a finaliser or a garbage-collection
    callback, where Python can only print it and carry on, is sent again (from another thread, so
    that it lands after the finaliser): the command then ends, instead of running on to the end."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):
        signum = signal.SIGINT
    elif isinstance(exc, _Terminated):
        signum = signal.SIGTERM
    else:
        previous_hook(unraisable)
        return
    _thread.start_new_thread(_send_soon, (signum,))


def _send_soon(signum: int) -> None:
    time.sleep(0.01)
    os.kill(os.getpid(), signum)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `attnflow` console script; returns an exit status ([`EXIT_CODES`][]).

    `--help`, `list` and a misspelt paper, level, check or figure are answered from the papers'
    catalog (`attnflow._catalog`), without importing JAX where the catalog of these sources is
    kept; everything else sets up JAX (`attnflow._runtime.set_up`) first. Ctrl-C and SIGTERM end
    the command with one line at any moment, its start-up included."""
    previous = signal.signal(signal.SIGTERM, _terminate) if _in_main_thread() else None
    previous_hook = sys.unraisablehook
    sys.unraisablehook = functools.partial(_redeliver, previous_hook)
    try:
        return _run_command(argv)
    except KeyboardInterrupt:
        print("attnflow: interrupted; what was written stays (rerun to resume)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the output's reader is gone: stop quietly, as the shell's tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at the final flush
        return 141
    except _Terminated:
        print("attnflow: terminated; what was written stays (rerun to resume)", file=sys.stderr)
        sys.stderr.flush()
        sys.stdout.flush()
        # the process ends now, as SIGTERM asks: a compilation still running in XLA's threads
        # would crash against an interpreter that shuts down around it
        os._exit(143)
    finally:
        sys.unraisablehook = previous_hook
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _check_jobs(args: argparse.Namespace) -> None:
    """Refuse `--jobs` below 1 or above the cores this process may use: each worker is a process
    that computes on its own, so more would only crowd the cores (and the memory)."""
    jobs, cores = getattr(args, "jobs", None), _runtime.default_jobs()
    if jobs is not None and not 1 <= jobs <= cores:
        raise ValueError(f"--jobs must be from 1 to the {cores} cores here, got {jobs}")


def _run_command(argv: list[str] | None) -> int:
    """Parse `argv` and run its command; a bad input or a failure of the work as one line."""
    args = build_parser().parse_args(argv)
    try:
        os.getcwd()
    except FileNotFoundError:
        print(
            "attnflow: error: the working folder no longer exists: change to a folder that does",
            file=sys.stderr,
        )
        return 2
    try:
        _check_jobs(args)
        answered = _answer_from_catalog(args)
    except ValueError as err:
        print(f"attnflow: error: {err}", file=sys.stderr)
        return 2
    if answered is not None:
        return answered
    _runtime.set_up(compile_cache=not args.no_compile_cache)  # before any paper is imported
    import dynamics

    from . import _commands

    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            if args.func == "list":
                _listing.list_class(args.target)
                return 0
            return getattr(_commands, args.func)(args)
    except ValueError as err:  # a bad input: say which and why, without a traceback
        print(f"attnflow: error: {err}{_command_line_remedy(err)}", file=sys.stderr)
        return 2
    except _commands.WorkFailed as err:
        print(f"attnflow: error: {err}", file=sys.stderr)
        return 3
    except OSError as err:
        print(f"attnflow: error: {dynamics.store.describe_os_error(err)}", file=sys.stderr)
        return 3


def _command_line_remedy(err: ValueError) -> str:
    """What the command line offers for an error the engine raised in terms of its arguments."""
    import dynamics

    if isinstance(err, dynamics.store.StoreNeedsRuns):
        return f"; `attnflow check {err.path or 'STORE'} --repair` runs them from the store alone"
    if isinstance(err, dynamics.store.StoreNeedsRemaking):
        return "; on the command line, --overwrite"
    if isinstance(err, dynamics.store.ResultsTooLarge):
        return "; on the command line, --max-bytes SIZE"
    return ""


def _answer_from_catalog(args: argparse.Namespace) -> int | None:
    """What the papers' catalog answers before any work: `list` of the papers or of one paper,
    `figures --list` (their exit status), or `None` once the names the command gives (its paper,
    level, checks, figures) are found.

    **Raises:** `ValueError` for a name that is not found, with what is known.
    """
    listing = (args.func == "figures" and args.list) or (args.func == "list" and not _names_a_class(args))
    if listing:
        found = _catalog.known_catalog()
        if found is None:  # read from the code: the runtime comes first
            _runtime.set_up(compile_cache=not args.no_compile_cache)
            from .papers import catalog

            found = catalog()
        if args.func == "figures":
            _listing.list_figures(found)
        elif args.target is None:
            _listing.list_papers(found)
        else:
            _names.refuse_class_name_as_paper(args.target, found)
            _listing.list_paper(args.target, found)
        return 0
    found = _catalog.known_catalog()
    if found is None:
        return None  # the command looks the names up once the papers are read
    if args.func in ("simulate", "sweep") and ":" not in args.target:
        _names.refuse_class_name_as_paper(args.target, found)
        _names.level_named(args.target, args.level, found)
    elif args.func == "verify":
        if args.paper:
            _names.paper_named(args.paper, found)
        if args.check:
            _names.checks_named(args.check, [args.paper] if args.paper else None, found)
    elif args.func == "figures" and not args.all:
        _names.figures_named(args.names, found)
    return None


def _names_a_class(args: argparse.Namespace) -> bool:
    """Whether `attnflow list` names a user's class (`package.module:ClassName`)."""
    return args.func == "list" and args.target is not None and ":" in args.target


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line, `attnflow: warning: ...`, without the source line that raised it."""
    print(f"attnflow: warning: {message}", file=sys.stderr if file is None else file)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    sys.exit(main())
