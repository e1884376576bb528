"""The commands of the `attnflow` command line, each `(args) -> exit status`; `attnflow.cli` parses
the command line and dispatches to them."""

import argparse
import contextlib
import dataclasses
import hashlib
import inspect
import json
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import jax
import numpy as np

from ._provenance import provenance


def _metadata(args: argparse.Namespace) -> dict:
    return provenance() | {"options": {k: v for k, v in vars(args).items() if k != "func"}}


def verify(args: argparse.Namespace) -> int:
    """`attnflow verify`: the checks of the papers (or of one, or those named), a table and a JSON
    report; 1 if one fails."""
    import dynamics

    from ._kept_checks import drop_kept, kept_folder, refuse_foreign
    from ._pieces import paper_checks
    from ._render import text_table, write_json
    from ._workers import costs, run_pieces, schedule
    from .papers import catalog, checks_named, paper

    names = [paper(args.paper).name] if args.paper else list(catalog()["papers"])
    only = checks_named(args.check, names) if args.check else {}
    names = list(only) if only else names
    dynamics.store.prepare_file(args.json, "--json")
    keep = kept_folder(args.json)
    refuse_foreign(keep)
    pieces = schedule(names, ("checks",), args.full)
    order = [name for name, _ in pieces]
    tasks = [(paper_checks, (name, args.full, only.get(name), keep)) for name in order]
    results, compiling = run_pieces(
        tasks, args.jobs, jax.config.jax_compilation_cache_dir, costs=costs(pieces, args.full)
    )
    by_paper = dict(zip(order, results))
    checks = [check for name in names for check in by_paper[name]]
    print(text_table(checks))
    print(f"compiling: {compiling.summary()}")
    path = write_json(checks, args.json, _metadata(args) | {"compiling": compiling.to_dict()})
    drop_kept(keep, checks)
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
    if args.seed + args.seeds - 1 > dynamics.store.MAX_SEED:
        raise ValueError(
            f"--seed {args.seed} with --seeds {args.seeds} reaches past the largest seed, 2**31 - 1 "
            f"= {dynamics.store.MAX_SEED}"
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
    if "SLURM_ARRAY_TASK_ID" not in os.environ:
        return 0, 1
    names = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN")
    values = {name: os.environ.get(name, "0" if name.endswith("MIN") else "") for name in names}
    try:
        task, count, first = (int(values[name]) for name in names)
    except ValueError:
        given = ", ".join(f"{name}={values[name]!r}" for name in names[:2])
        raise ValueError(
            f"a SLURM array task needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT as integers ({given}): "
            "run it as an array job, or give --shard I/N"
        ) from None
    if not 0 <= task - first < count:
        raise ValueError(
            f"SLURM_ARRAY_TASK_ID {task} is not among the {count} tasks of the array from {first}: "
            "give --shard I/N"
        )
    return task - first, count


CHUNK_SIZE = 64
"""The most runs of a block of the command line's sweeps (`dynamics.sweep`'s `chunk_size`)."""


def _refuse_idle_shards(args: argparse.Namespace, sim, grid: dict) -> None:
    """Refuse, before any work, more shards (`--shard I/N`, a SLURM array) or jobs (`--launch N`)
    than the sweep of `sim` over `grid` has blocks: the others would have nothing to run."""
    import dynamics

    launch = getattr(args, "launch", None)
    count, what = (launch, "jobs (--launch)") if launch is not None else (_shard(args)[1], "shards")
    runs = args.seeds * math.prod(len(values) for values in grid.values())
    if count <= -(-runs // CHUNK_SIZE):  # as many blocks at least: no need to count them
        return
    blocks = dynamics.store.sweep_blocks(sim, grid, num_seeds=args.seeds, chunk_size=CHUNK_SIZE)
    if count > blocks:
        raise ValueError(
            f"{count} {what} for a sweep of {blocks} block{'s' * (blocks != 1)}: the others would have "
            f"nothing to run; give at most {blocks}"
        )


def _stop_summary(ds, sim) -> str:
    """`completed x3, event:loss_below x1`: how the runs of a sweep of `sim` stopped (for runs that
    used their whole step budget, the times they reached, and which of `sim`'s settings help)."""
    import dynamics

    labels = np.asarray(dynamics.stop_reasons(ds)).ravel().astype(str)
    names, counts = np.unique(labels, return_counts=True)
    text = ", ".join(f"{name} x{n}" for name, n in zip(names, counts))
    if "max_steps" in names:
        reached = np.asarray(ds["t_stop"]).ravel()[np.asarray(labels) == "max_steps"]
        has = {field.name for field in dataclasses.fields(sim)}
        helps = [
            hint
            for name, hint in (("max_steps", "raise --set max_steps=..."), ("t1", "lower t1"))
            if name in has
        ]
        budget = "the step budget max_steps" if "max_steps" in has else "the step budget"
        text += f" ({budget} ran out at t = {reached.min():.4g} to {reached.max():.4g}"
        text += f": {', or '.join(helps)})" if helps else ")"
    return text


PILOT_STEPS = 10_000
"""The step budget of the pilot block that times a raised `max_steps` before a sweep."""


def _say_step_budget(args: argparse.Namespace, sim, grid: dict, store: Path) -> None:
    """Where a sweep raises `max_steps` above its class's default and past ten times
    [`PILOT_STEPS`][], say before the work how long a block whose runs spend the whole budget
    takes: a pilot block (the sweep's width, the base settings, `max_steps` = `PILOT_STEPS`) is
    compiled, then timed and scaled. Nothing is said where the pilot's runs end within its budget
    (the budget is then not what the runs take), or where the store is already complete."""
    import dynamics

    default = {info.name: info.default for info in dynamics.params(type(sim))}.get("max_steps")
    if default is None:
        return
    budget = max([sim.max_steps, *grid.get("max_steps", [])])
    if budget <= max(default, 10 * PILOT_STEPS):
        return
    with contextlib.suppress(ValueError, OSError):
        written, total = dynamics.store.sweep_progress(store)
        if written == total:
            return
    width = min(CHUNK_SIZE, math.prod(len(values) for values in grid.values()) * args.seeds)
    try:
        pilot = dataclasses.replace(sim, max_steps=PILOT_STEPS)
    except ValueError:  # a class that ties max_steps to its other settings: no pilot to run
        return
    keys = dynamics.seed_keys(args.seed, width)
    dynamics.run_many(pilot.run, keys)  # compiled here, not timed
    start = time.perf_counter()
    runs, _ = dynamics.run_many(pilot.run, keys)
    seconds = time.perf_counter() - start
    if not np.any(runs.stop == dynamics.StopReason.max_steps):
        return
    block = seconds * budget / PILOT_STEPS
    blocks = dynamics.store.sweep_blocks(sim, grid, num_seeds=args.seeds, chunk_size=CHUNK_SIZE)
    print(
        f"max_steps={budget:,}: a block of {width} run{'s' * (width != 1)} that spends it takes about "
        f"{dynamics.duration(block)}, the {blocks} block{'s' * (blocks != 1)} up to about "
        f"{dynamics.duration(block * blocks)} ({PILOT_STEPS:,} steps took {dynamics.duration(seconds)} in a "
        "pilot block); a smaller budget stops sooner, with the time each run reached"
    )


class WorkFailed(Exception):
    """The work failed after it started (a full disk, a lost file); what is written stays."""


def _refine_request(args: argparse.Namespace, grid: dict):
    """`--refine OUTCOME`: the outcome (a `dynamics.landscape.Outcome`), refused before any work unless the
    grid has one or two axes, the seeds, the budget and the scale suit `dynamics.landscape.refine_sweep`, and
    the command runs in one process (no shard, no launch); `None` without `--refine`."""
    import dynamics

    if args.refine is None:
        return None
    outcome = dynamics.landscape.Outcome.parse(args.refine)
    if not 1 <= len(grid) <= 2:
        raise ValueError(f"--refine locates a boundary over one or two --grid axes, got {len(grid)}")
    if args.shard is not None or args.launch is not None:
        raise ValueError("--refine picks each round's points from the rounds before: it runs in one process")
    dynamics.landscape.check_refine_settings(grid, args.seeds, args.budget, args.refine_scale)
    return outcome


def _write_refined(args: argparse.Namespace, sim, grid: dict, outcome, out: Path):
    """The refined sweep: its rounds kept in `OUT/rounds/` (resumed there), then every point in
    one store, `OUT/sweep.zarr`; prints where the outcome changes."""
    import dynamics

    if args.overwrite:
        for old in sorted((out / "rounds").glob("round_*.zarr")):
            dynamics.store.remove_store(old)
    start = time.perf_counter()
    with dynamics.recording_compiles() as compiling:
        ds = dynamics.landscape.refine_sweep(
            sim,
            grid,
            outcome,
            num_seeds=args.seeds,
            budget=args.budget,
            scale=args.refine_scale,
            seed=args.seed,
            folder=out / "rounds",
            progress=True,
            attrs={"provenance": json.dumps(provenance())},
        )
    dynamics.store.save_sweep(ds, out / "sweep.zarr")
    about = json.loads(ds.attrs["refine"])
    points = ds.sizes[next(iter(grid)) if len(grid) == 1 else dynamics.store.POINT_DIM]
    print(
        f"{out / 'sweep.zarr'}: {points} points in {len(about['rounds'])} rounds "
        f"({time.perf_counter() - start:.1f} s); {outcome.name} changes {_where(about)}"
    )
    print(f"compiling: {compiling.stats.summary()}")
    return ds


def _where(about: dict) -> str:
    """Where a refined sweep's outcome changes, in words: the intervals along its axis, or over two
    axes how many cells, the ranges they cover and the widest a cell is along each axis."""
    boundaries, axes = about["boundaries"], about["axes"]
    if not boundaries:
        return "nowhere"
    if len(axes) == 1:
        return "; ".join(f"{axes[0]} in [{low:.6g}, {high:.6g}]" for low, high in boundaries)
    spans = []
    for a, name in enumerate(axes):
        lows, highs = [c[2 * a] for c in boundaries], [c[2 * a + 1] for c in boundaries]
        if about["scale"] == "log":
            widest = f"{100 * max(h / low - 1 for low, h in zip(lows, highs)):.2g} %"
        else:
            widest = f"{max(h - low for low, h in zip(lows, highs)):.3g}"
        spans.append(f"{name} in [{min(lows):.6g}, {max(highs):.6g}] (cells at most {widest} wide)")
    return f"in {len(boundaries)} cells over " + " and ".join(spans)


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
    _say_step_budget(args, sim, grid, store)
    start = time.perf_counter()
    try:
        with dynamics.recording_compiles() as compiling:
            dynamics.sweep(
                sim,
                grid,
                num_seeds=args.seeds,
                seed=args.seed,
                chunk_size=CHUNK_SIZE,
                progress=True,
                store=store,
                shard=shard,
                attrs={"provenance": json.dumps(provenance())},
                overwrite=args.overwrite,
                max_bytes=dynamics.store.DEFAULT_MAX_BYTES if args.max_bytes is None else args.max_bytes,
            )
    except OSError as err:
        raise WorkFailed(f"{dynamics.store.describe_os_error(err)}; {_progress_text(store)}") from None
    except jax.errors.JaxRuntimeError as err:  # e.g. out of memory on the device
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise WorkFailed(f"the runs failed: {first}; {_progress_text(store)}") from None
    written, total = dynamics.store.sweep_progress(store)
    print(f"{store}: {written} of {total} blocks written ({time.perf_counter() - start:.1f} s here)")
    print(f"compiling: {compiling.stats.summary()}")
    if written < total:
        print("the other shards' blocks are still to come; rerun without --shard once they are done")
        return None
    ds = _opened(store)
    print(f"{ds.sizes[dynamics.store.SEED_DIM]} seeds per point; stops: {_stop_summary(ds, sim)}")
    return ds


def _opened(store: Path):
    """The finished sweep at `store`, opened to be read a variable at a time (the runs may not fit
    in memory). Where the only damage to it is to the variables its analyses added, they are
    removed first, saying so: the runs are intact, and `--analyse` adds them again."""
    import dynamics

    try:
        return dynamics.store.open_sweep(store)
    except ValueError:
        report = dynamics.store.check_store(store)  # checked again only where the store was refused
        if not report.only_added_damaged:
            raise
    dropped = dynamics.store.drop_added(store)
    why = report.problems[0].split(" (add them again")[0]
    print(
        f"the analyses added to {store} were damaged ({why}): {', '.join(dropped)} removed; "
        "--analyse adds them again"
    )
    return dynamics.store.open_sweep(store)


def _progress_text(store: Path) -> str:
    """`3 of 6 blocks done in STORE; rerun the same command to resume`, as far as it can be read."""
    import dynamics

    try:
        written, total = dynamics.store.sweep_progress(store)
    except (ValueError, OSError):
        return f"no block of {store} was written; rerun the same command once the cause is fixed"
    return f"{written} of {total} blocks done in {store}; rerun the same command to resume"


def simulate(args: argparse.Namespace) -> int:
    """`attnflow simulate`: many seeds of one level (or a user's class) into a store of their own."""
    import dynamics

    cls, sim = _simulation(args)
    _check_seeds(args)
    analyses = _analyses(args.analyse, sim)
    _refuse_idle_shards(args, sim, {})
    config = sim.describe() | {"num_seeds": args.seeds, "seed": args.seed}
    with _output_folder(args.out) as out:
        store = out / f"{_label(args, cls)}_{args.seeds}seeds_{_config_hash(config)}.zarr"
        with dynamics.store.hold_store(store):  # to the summary's last read, the analyses' last plot
            ds = _write_sweep(args, sim, {}, store)
            if ds is not None and analyses:
                plots = out / f"{store.stem}.plots"
                print(f"wrote {_plots(_analyse(ds, sim, analyses, [], store, plots))} in {plots}")
    return 0


def _plots(paths: list[Path]) -> str:
    """`1 plot`, `7 plots`."""
    return f"{len(paths)} plot{'s' * (len(paths) != 1)}"


@contextlib.contextmanager
def _output_folder(path: str) -> Iterator[Path]:
    """`--out`, prepared before any work (`dynamics.store.prepare_folder`); where the work then refuses
    its input (a `ValueError`, e.g. a user's `run` that returns no `Run`) and the folder this made
    is still empty, it is removed: a refused command leaves nothing behind."""
    import dynamics

    existed = os.path.exists(path)
    out = dynamics.store.prepare_folder(path, "--out")
    try:
        yield out
    except ValueError:
        if not existed:
            with contextlib.suppress(OSError):
                out.rmdir()  # only where nothing was written in it
        raise


def _parse_grid(cls, texts: list[str], settings: list[str]) -> dict[str, list]:
    """The grid of `--grid KEY=V1,V2,...` options, each value checked; refused where an item is
    empty or a key is also given by `--set` (`settings`)."""
    import dynamics

    pairs = _parse_pairs(texts, "--grid")
    both = sorted(set(pairs) & set(_parse_pairs(settings, "--set")))
    if both:
        raise ValueError(
            f"{', '.join(both)} is given by both --grid and --set: give each setting once (--grid for the "
            "values the sweep runs through, --set for one value)"
        )
    grid = {}
    for key, text in pairs.items():
        items = [item.strip() for item in text.split(",")]
        if not all(items):
            raise ValueError(f"--grid {key}={text}: an empty value between commas; give every value")
        grid[key] = [dynamics.parse_settings(cls, {key: item})[key] for item in items]
    return grid


def _shard_argv(args: argparse.Namespace) -> list[str]:
    """The command line of one shard of this sweep (everything but the launch options)."""
    argv = ["sweep", args.target, "--seeds", str(args.seeds), "--seed", str(args.seed), "--out", args.out]
    argv += ["--level", args.level] if args.level else []
    for option, values in (("--set", args.set), ("--grid", args.grid)):
        argv += [text for value in values for text in (option, value)]
    return argv


def _launch_parameters(args: argparse.Namespace) -> dict | None:
    """The job parameters of `--launch` (`None` without it), everything about the jobs checked
    before any work: `--cluster` and `--job` only with `--launch`."""
    from ._launch import check_jobs

    if args.launch is None:
        given = [flag for flag, value in (("--cluster", args.cluster), ("--job", args.job)) if value]
        if given:
            verb = "is a setting" if len(given) == 1 else "are settings"
            raise ValueError(f"{' and '.join(given)} {verb} of --launch N's jobs: give --launch N too")
        return None
    if args.launch < 1:
        raise ValueError(f"--launch must be >= 1, got {args.launch}")
    if args.shard:
        raise ValueError("--launch runs every shard: give --launch or --shard, not both")
    parameters = {key: _job_value(value) for key, value in _parse_pairs(args.job, "--job").items()}
    check_jobs(args.cluster or "auto", parameters)
    return parameters


def _launch(args: argparse.Namespace, parameters: dict, out: Path) -> None:
    import dynamics

    from ._launch import launch_shards

    if args.overwrite:
        dynamics.store.remove_store(out / "sweep.zarr")
    launch_shards(_shard_argv(args), args.launch, out / "jobs", args.cluster or "auto", parameters)


def _job_value(text: str):
    """A job parameter from text: an integer, a number, or the text itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def sweep(args: argparse.Namespace) -> int:
    """`attnflow sweep`: a grid of settings × seeds into `OUT/sweep.zarr`, with its plots."""
    import dynamics

    from ._sweep_plots import plot_refined, plot_sweep

    cls, sim = _simulation(args)
    _check_seeds(args)
    grid = _parse_grid(cls, args.grid, args.set)
    analyses = _analyses(args.analyse, sim)
    launch = _launch_parameters(args)
    refine = _refine_request(args, grid)
    _refuse_idle_shards(args, sim, grid)
    with _output_folder(args.out) as out, dynamics.store.hold_store(out / "sweep.zarr"):  # to the last plot
        if launch is not None:
            _launch(args, launch, out)
            ds = dynamics.store.open_sweep(out / "sweep.zarr")
        elif refine is not None:
            ds = _write_refined(args, sim, grid, refine, out)
        else:
            ds = _write_sweep(args, sim, grid, out / "sweep.zarr")
        if ds is not None:
            axes = [dim for dim in ds["stop"].dims if dim != dynamics.store.SEED_DIM]  # `point` for a plane
            plots = plot_sweep(ds, axes, out / "plots", sim.labels)
            if refine is not None:
                plots += plot_refined(ds, out / "plots")
            plots += _analyse(ds, sim, analyses, axes, out / "sweep.zarr", out / "plots")
            print(f"wrote {_plots(plots)} in {out / 'plots'}")
    return 0


ANALYSES = ("phases", "saddles", "critical_point", "sharpness")
"""What `attnflow sweep --analyse` computes from every run of a finished sweep."""
GRAD_NORM = "grad_norm"
"""The saved series that `--analyse phases` takes as the gradient norm, where a simulation saves it."""


def _analysis_functions() -> dict:
    """Each analysis's function in `dynamics`, whose keyword-only arguments are its settings."""
    import dynamics

    return {
        "phases": dynamics.landscape.sweep_phases,
        "saddles": dynamics.landscape.sweep_saddles,
        "critical_point": dynamics.landscape.sweep_critical_points,
        "sharpness": dynamics.landscape.sweep_sharpness,
    }


def _analysis_settings(name: str, items: list[str]) -> dict:
    """The settings `key=value` of analysis `name` (`--analyse phases:min_depth=2:leave=0.1`),
    each a keyword-only argument of its function (`keep` excepted: the command keeps the polished
    runs itself), read as the type of its default; refused one by one with what is allowed."""
    signature = inspect.signature(_analysis_functions()[name])
    allowed = {
        key: parameter.default
        for key, parameter in signature.parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and key != "keep"
    }
    settings = {}
    for item in items:
        key, equals, text = item.partition("=")
        if key not in allowed or not equals:
            raise ValueError(
                f"--analyse {name}:{item}: give the settings of {name} as key=value, among "
                f"{', '.join(f'{k}={v!r}' for k, v in allowed.items())}"
            )
        kind = type(allowed[key])
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None:
            bad = True
        elif kind is int:
            bad = value < 1
        else:  # a distance may be unbounded where its default is
            bad = math.isnan(value) or value < 0 or (math.isinf(value) and math.isfinite(allowed[key]))
        if bad:
            wanted = "an integer >= 1" if kind is int else "a number >= 0"
            raise ValueError(f"--analyse {name}:{item}: {key} must be {wanted}, got {text!r}")
        settings[key] = value
    return settings


def _analyses(text: str | None, sim) -> dict[str, dict]:
    """The analyses named by `--analyse` (comma-separated, each with its settings after colons;
    none without it), name -> settings, refused before any work when one is empty or unknown, a
    setting is not the analysis's, or the simulation does not save or declare what it needs."""
    import dynamics

    if text is None:
        return {}
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise ValueError(f"--analyse {text!r}: an empty name; give analyses among {', '.join(ANALYSES)}")
    analyses = {}
    for item in items:
        name, *settings = item.split(":")
        if name not in ANALYSES:
            raise ValueError(f"--analyse: unknown analysis {name} (known: {', '.join(ANALYSES)})")
        if name in analyses:
            raise ValueError(f"--analyse names {name} twice")
        analyses[name] = _analysis_settings(name, settings)
    if "phases" in analyses:
        try:
            dynamics.landscape.check_phase_settings(**analyses["phases"])
        except ValueError as err:
            raise ValueError(f"--analyse {err}") from None
        series = dynamics.landscape.saved_series(sim)
        if sim.loss_name not in series:
            raise ValueError(
                f"--analyse phases splits the saved loss {sim.loss_name!r} (the class's loss_name), which "
                f"{type(sim).__name__} does not save as one number per save (its saved series: "
                f"{', '.join(series) or 'none'})"
            )
    if "saddles" in analyses and "phases" not in analyses:
        raise ValueError(
            "--analyse saddles polishes the plateaus that phases finds: name both (--analyse phases,saddles)"
        )
    for name in ("saddles", "critical_point", "sharpness"):
        if name in analyses:
            try:
                dynamics.landscape.require_landscape(sim, name, saved=name == "saddles")
            except ValueError as err:
                raise ValueError(f"--analyse {err}") from None
    return analyses


def _analyse(ds, sim, analyses: dict[str, dict], axes: list[str], store: Path, plots_dir: Path) -> list[Path]:
    """Run `analyses` (name -> settings) on the finished sweep `ds`, add each to its `store` (as
    variables `<name>.*` with their checksums: a rerun computes them again) and draw its plots into
    `plots_dir`;
    returns the plots. An analysis an earlier version wrote beside a sweep's store (`<name>.zarr`
    beside `sweep.zarr`) is removed where it describes other runs or is written into the store now."""
    import dynamics

    from ._sweep_plots import plot_critical_points, plot_phases, plot_saddles, plot_sharpness

    out = store.parent
    plots = []
    for name in ANALYSES:
        beside = out / f"{name}.zarr"
        if (
            store.name == "sweep.zarr"
            and beside.exists()
            and (
                name in analyses
                or dynamics.store.open_sweep(beside).attrs.get("identity") != ds.attrs.get("identity")
            )
        ):
            dynamics.store.remove_store(beside)
            print(f"removed {beside}: the analyses are kept in {store} now")
        if name not in analyses:
            continue
        if name == "phases":
            grad_norm = GRAD_NORM if GRAD_NORM in dynamics.landscape.saved_series(sim) else None
            found = dynamics.landscape.sweep_phases(ds, sim.loss_name, grad_norm, **analyses[name])
            counts = np.asarray(found["phases.count"]).ravel()
            summary = f"{_span(counts.min(), counts.max(), 'd')} plateaus per run"
            drawn = plot_phases(ds, found, axes, sim.loss_name, plots_dir, sim.labels)
            plateaus = found
        elif name == "saddles":
            start = time.perf_counter()
            found = dynamics.landscape.sweep_saddles(
                ds, sim, plateaus, keep=out / "saddles.kept", **analyses[name]
            )
            summary = f"plateaus {_status_summary(found, name)} ({time.perf_counter() - start:.1f} s)"
            drawn = plot_saddles(found, plots_dir)
        elif name == "critical_point":
            print(
                f"critical points: {dynamics.landscape.num_params(sim)} parameters per run (each Newton step "
                "forms the dense Hessian, n² numbers)"
            )
            start = time.perf_counter()
            kept = out / "critical_point.kept"
            if kept.exists():
                print(
                    f"critical points: the runs kept in {kept} are read where this sweep and code made them"
                )
            found = dynamics.landscape.sweep_critical_points(ds, sim, keep=kept, **analyses[name])
            summary = f"{_status_summary(found)} ({time.perf_counter() - start:.1f} s)"
            drawn = plot_critical_points(found, axes, plots_dir)
        else:
            found = dynamics.landscape.sweep_sharpness(ds, sim, **analyses[name])
            top = np.asarray(found["sharpness.max_eigenvalue"])
            summary = f"top Hessian eigenvalue {_span(np.nanmin(top), np.nanmax(top), '.4g')}"
            if "sharpness.ratio" in found:
                summary += (
                    f"; past the edge of stability in {int(np.sum(found['sharpness.ratio'] >= 1))} runs"
                )
            drawn = plot_sharpness(found, axes, plots_dir)
        dynamics.store.add_to_store(store, found)
        print(f"added {name}.* to {store}: {summary}")
        plots += drawn
    return plots


def _span(low, high, spec: str) -> str:
    """`low to high` formatted by `spec` (`1 to 3`), or the one value where both read the same
    (`0`, not `0 to 0`)."""
    low, high = format(low, spec), format(high, spec)
    return low if low == high else f"{low} to {high}"


def _status_summary(found, analysis: str = "critical_point") -> str:
    """`converged x3 (index 0 x2, index 1 x1), max_steps x1`: how the polishing of the runs (of the
    plateaus, for `saddles`) ended."""
    import dynamics

    status = np.asarray(found[f"{analysis}.status"]).ravel()
    index = np.asarray(found[f"{analysis}.index"]).ravel()
    index, status = index[status >= 0], status[status >= 0]  # −1: past a run's plateaus
    parts = []
    for code, name in enumerate(dynamics.landscape.CRITICAL_POINT_STATUSES):
        count = int(np.sum(status == code))
        if not count:
            continue
        text = f"{name} x{count}"
        if name == "converged":
            values, counts = np.unique(index[status == code], return_counts=True)
            text += " (" + ", ".join(f"index {v} x{n}" for v, n in zip(values, counts)) + ")"
        parts.append(text)
    others = (
        "for the others"
        if np.any(status == 0)
        else f"for any {'plateau' if analysis == 'saddles' else 'run'}"
    )
    nearby = f"; no critical point nearby {others}" if np.any(status != 0) else ""
    return ", ".join(parts) + nearby


def _checked_data(directory: str | None) -> str | None:
    """`--data DIR`: check, before any work, that DIR holds what each paper with a data option
    reads (`tasks.PaperInfo.data`); the directory, made absolute, that the figures and checks are
    then given (an argument of each piece), or `None` without `--data`."""
    if directory is None:
        return None
    from .papers import loaded, with_data

    options = [loaded(name).info.data for name in with_data()]
    if not options:
        raise ValueError("--data: no paper reads a data directory")
    for option in options:
        try:
            option.check(str(directory))
        except ValueError as err:
            raise ValueError(f"--data: {err}") from None
    return os.path.abspath(os.path.expanduser(directory))


def figures(args: argparse.Namespace) -> int:
    """`attnflow figures`: the named figures (or all), PNG, PDF and JSON each; the papers' figures
    side by side in `--jobs` worker processes (one paper's figures in one, as they share runs)."""
    import dynamics

    from ._names import figures_named
    from ._pieces import paper_figures, shared_runs
    from ._workers import costs, run_pieces, schedule
    from .papers import catalog

    known = catalog()
    found = known["papers"]
    every = [name for record in found.values() for name in record["figures"]]
    names = every if args.all else figures_named(args.names, known)
    data = _checked_data(args.data)
    out = dynamics.store.prepare_folder(args.out, "--out")
    wanted = {paper: [n for n in names if n in record["figures"]] for paper, record in found.items()}
    scheduled = schedule([p for p, chosen in wanted.items() if chosen], ("figures",), args.full)
    pieces = [(paper_figures, (paper, out, args.full, wanted[paper], data)) for paper, _ in scheduled]
    with shared_runs(out / "shared_runs", data, [paper for paper, _ in scheduled]):
        _, compiling = run_pieces(
            pieces, args.jobs, jax.config.jax_compilation_cache_dir, costs=costs(scheduled, args.full)
        )
    print(f"compiling: {compiling.summary()}")
    return 0


def reproduce(args: argparse.Namespace) -> int:
    """`attnflow reproduce`: every check and every figure, and the page that gathers them."""
    import dynamics

    from ._reproduce import reproduce
    from .papers import paper

    names = list(dict.fromkeys(paper(name).name for name in args.paper)) or None
    data = _checked_data(args.data)
    docs = _docs_base(args.docs, Path(args.out))
    out = dynamics.store.prepare_folder(args.out, "--out")
    dynamics.store.prepare_folder(out / "figures", "the figures' folder")
    metadata = _metadata(args)
    return reproduce(
        out, full=args.full, metadata=metadata, jobs=args.jobs, docs=docs, data=data, names=names
    )


def _docs_base(docs: str | None, out: Path) -> str | None:
    """`--docs`: an address as given, or a site's folder as a path relative to the report (so that
    the two can be moved together); a folder that holds no built site yet is said aloud."""
    if docs is None or "://" in docs:
        return docs.rstrip("/") if docs else None
    if not (Path(docs) / "papers").is_dir():
        print(
            f"attnflow: --docs {docs} holds no built site yet: the report's links to it work once it is built"
        )
    return Path(os.path.relpath(Path(docs).resolve(), out.resolve())).as_posix()


def check_store(args: argparse.Namespace) -> int:
    """`attnflow check`: a store's state, and with `--repair` its damaged blocks run again."""
    from ._store_check import check

    return check(Path(args.store), repair=args.repair)
