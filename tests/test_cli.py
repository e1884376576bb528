"""The command line: one registry for every command, errors that name the field before any work,
simulate and sweep outputs that load with their config, and verify's exit code."""

import importlib
import json
import os
import pkgutil
import shlex
import subprocess
import sys

import pytest
import xarray as xr

import dynamics
import tasks
import theory
from attnflow import _commands, _runtime, cli
from attnflow.papers import Paper, catalog_of, checks_named, load_simulation, loaded, papers

from .helpers import REPOSITORY

PAPER = next(iter(papers()))
"""A paper, for what every paper's command line does alike."""


def test_one_registry_names_every_paper_everywhere():
    declared = sorted(
        m.name
        for m in pkgutil.iter_modules(tasks.__path__)
        if isinstance(getattr(importlib.import_module(f"tasks.{m.name}"), "PAPER", None), tasks.PaperInfo)
    )
    assert list(papers()) == declared and len(declared) >= 5
    for name, paper in papers().items():
        assert paper.simulations and paper.checks and paper.figures
        assert all(figure.startswith(f"{name}_") for figure in paper.figures)
        assert all(issubclass(cls, dynamics.AbstractSimulation) for cls in paper.simulations.values())
        assert all(cls.path().startswith(f"tasks.{name}:") for cls in paper.simulations.values())


_PAPERS_IMPORTED = """
import json, sys
from attnflow import cli
status = cli.main(sys.argv[1:])
packages = ("tasks", "theory", "figures")
imported = {m.split(".")[1] for m in sys.modules if m.count(".") == 1 and m.split(".")[0] in packages}
print(json.dumps({"status": status, "papers": sorted(p for p in imported if not p.startswith("_"))}))
"""


def test_a_command_of_one_paper_imports_that_paper_alone(tmp_path):
    """Once the catalog is kept (by any earlier command), `figures` and `verify` of one paper's
    figure or check import that paper's modules and no other paper's; `loaded` gives the paper
    `papers()` gives."""
    env = os.environ | {"XDG_CACHE_HOME": str(tmp_path / "cache"), "MPLBACKEND": "Agg"}

    def imported(*argv):
        done = subprocess.run(
            [sys.executable, "-c", _PAPERS_IMPORTED, *argv],
            cwd=REPOSITORY, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert imported("list")["status"] == 0  # keeps the catalog, read from every paper
    figure = imported("figures", "ntp_partial_order_wkq_column", "--out", str(tmp_path / "f"), "--jobs", "1")
    assert figure == {"status": 0, "papers": ["ntp_partial_order"]}
    assert (tmp_path / "f" / "ntp_partial_order_wkq_column.png").exists()
    check = imported(
        "verify", "--check", "eqn2_closed_form_vs_qp", "--json", str(tmp_path / "v.json"), "--jobs", "1"
    )
    assert check == {"status": 0, "papers": ["ntp_partial_order"]}
    for name, paper in papers().items():
        assert loaded(name) == paper
    with pytest.raises(KeyError):
        loaded("no_such_paper")


def test_unknown_paper_and_class(capsys):
    assert cli.main(["simulate", "no_such_paper"]) == 2
    assert f"unknown paper 'no_such_paper'; known: {', '.join(papers())}" in capsys.readouterr().err
    refusals = {  # a figure or a check named where a paper goes, a misspelt figure
        ("list", "scan_snap_fig6"): "unknown paper 'scan_snap_fig6' (a figure of scan_snap); known: ",
        ("verify", "--paper", "lemma2_rate"): "unknown paper 'lemma2_rate' (a check of scan_snap); known: ",
        ("figures", "scan_snap_fig66"): "unknown figure 'scan_snap_fig66'; nearest: scan_snap_fig6",
        ("figures", "zzz"): "unknown figure 'zzz' (attnflow figures --list lists them)",
    }
    for argv, message in refusals.items():
        assert cli.main(list(argv)) == 2
        assert message in capsys.readouterr().err
    with pytest.raises(ValueError, match="cannot import 'no_such_module'"):
        load_simulation("no_such_module:Thing")
    with pytest.raises(
        ValueError, match="a class of your own is named with a colon, examples.custom_model:Retrieval"
    ):
        load_simulation("examples.custom_model.Retrieval")
    assert cli.main(["list", "examples.custom_model.Retrieval"]) == 2
    assert "named with a colon, examples.custom_model:Retrieval" in capsys.readouterr().err


@pytest.mark.slow
def test_a_users_class_sweeps_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(REPOSITORY)
    argv = ["sweep", "examples.custom_model:Retrieval", "--grid", "eta_w=0.5,2", "--grid", "tokens=3,4"]
    argv += ["--seeds", "2", "--set", "samples=16", "--set", "t1=20", "--out", str(tmp_path)]
    assert cli.main(argv) == 0
    ds = dynamics.load_sweep(tmp_path / "sweep.zarr")
    assert ds["loss"].dims == ("eta_w", "tokens", "seed", "save")
    assert ds.attrs["event_names"] == ["loss_below"]


EXAMPLES = [(command, example) for command, examples in cli.EXAMPLES.items() for example in examples]


@pytest.mark.parametrize(("command", "example"), EXAMPLES)
def test_every_example_of_the_help_parses_and_names_what_exists(command, example, monkeypatch):
    """Each example at the end of a `--help` is a command line that parses, and passes the checks
    its command makes before any work: its paper, level or class, its settings and grid, its
    analyses, its figures."""
    from attnflow.papers import all_figures, paper

    monkeypatch.chdir(REPOSITORY)  # examples.custom_model
    program, *argv = shlex.split(example)
    args = cli.build_parser().parse_args(argv)
    assert program == "attnflow" and command in ("attnflow", args.command)
    if args.command in ("simulate", "sweep"):
        cls, sim = _commands._simulation(args)
        _commands._check_seeds(args)
    if args.command == "sweep":
        assert _commands._parse_grid(cls, args.grid, args.set)
        _commands._analyses(args.analyse, sim)
        _commands._refuse_idle_shards(args, sim, _commands._parse_grid(cls, args.grid, args.set))
    if args.command == "verify" and args.paper:
        paper(args.paper)
    if args.command == "verify" and args.check:
        checks_named(args.check, [args.paper] if args.paper else None)
    if args.command == "list" and args.target:
        load_simulation(args.target) if ":" in args.target else paper(args.target)
    if args.command == "figures":
        assert set(args.names) <= set(all_figures())


def test_list_documents_every_level(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name}:" in out for name in papers())
    for name, paper in papers().items():
        assert cli.main(["list", name]) == 0
        lines = capsys.readouterr().out.splitlines()
        for check in paper.checks:
            assert f"  {check.__name__}: {check.declaration.claim}" in lines
        for figure in paper.figures:
            assert any(line.startswith(f"  {figure}: ") for line in lines)
        summaries = [line for line in lines if not line.startswith(("   ", "  a first try"))]
        assert not [line for line in summaries if "][" in line or "  " in line.strip()], name


def test_figures_list(capsys):
    assert cli.main(["figures", "--list"]) == 0
    names = capsys.readouterr().out.split()
    declared = [figure for paper in papers().values() for figure in paper.figures]
    assert names == declared
    assert cli.main(["figures", "no_such_figure"]) == 2


class _Still(dynamics.AbstractSimulation):
    """A level for the toy papers of these tests."""

    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        raise NotImplementedError


def _toy(*checks, name: str = "toy") -> Paper:
    return Paper(tasks.PaperInfo(name, "a toy paper", {"still": _Still}), checks, {})


def _counted(name: str, ran: list[str], stop: dict[str, type[BaseException]] | None = None):
    """A declared check called `name` that appends its name to `ran` when it runs, then raises
    `stop[name]` if there is one, else passes with `simulated` the number of checks run so far + 1."""

    def check():
        ran.append(name)
        if stop and name in stop:
            raise stop[name](f"{name} stopped")
        return theory.Measured(predicted=1.0, simulated=1.0 + len(ran), error=0.0)

    check.__name__ = check.__qualname__ = name
    return theory.claim(f"{name} holds", method="by hand", tolerance=1e-12)(check)


def test_verify_exit_code_and_json_follow_the_checks(tmp_path, monkeypatch, capsys):
    @theory.claim("1 = 1", method="by hand", tolerance=1e-12)
    def good():
        return theory.Measured(predicted=1.0, simulated=1.0, error=0.0)

    @theory.claim("1 = 2", method="by hand", tolerance=1e-12, sized=True)
    def bad(full: bool):
        return theory.Measured(predicted=1.0, simulated=2.0 if full else 3.0, error=1.0)

    monkeypatch.setitem(papers(), "toy", _toy(good))
    assert cli.main(["verify", "--paper", "toy", "--json", str(tmp_path / "ok.json")]) == 0
    monkeypatch.setitem(papers(), "toy", _toy(good, bad))
    assert cli.main(["verify", "--paper", "toy", "--json", str(tmp_path / "bad.json")]) == 1
    report = json.loads((tmp_path / "bad.json").read_text())
    # each check reports under its function's name and paper; `full` reaches only the sized checks
    assert [(c["paper"], c["name"], c["verdict"]) for c in report["checks"]] == [
        ("toy", "good", "pass"),
        ("toy", "bad", "fail"),
    ]
    assert report["checks"][1]["simulated"] == 3.0
    assert "checks: 1 pass, 1 fail" in capsys.readouterr().out


def test_verify_runs_only_the_checks_named(tmp_path, monkeypatch, capsys):
    ran = []
    first, second, third, shared = (_counted(name, ran) for name in ("first", "second", "third", "shared"))
    monkeypatch.setitem(papers(), "toy", _toy(first, second, shared))
    monkeypatch.setitem(papers(), "toy_too", _toy(third, shared, name="toy_too"))
    report = tmp_path / "some.json"
    argv = ["verify", "--paper", "toy", "--check", "second", "--check", "first", "--json", str(report)]
    assert cli.main(argv) == 0
    assert ran == ["first", "second"]  # the paper's order, each once
    assert [c["name"] for c in json.loads(report.read_text())["checks"]] == ["first", "second"]
    assert json.loads(report.read_text())["meta"]["options"]["check"] == ["second", "first"]
    ran.clear()
    assert checks_named(["third", "first"], ["toy", "toy_too"]) == {"toy": ["first"], "toy_too": ["third"]}
    refusals = {
        ("--check", "secnd"): "no check 'secnd'; nearest: second",
        ("--paper", "toy_too", "--check", "first"): "'first' is a check of toy, not of toy_too",
        ("--check", "shared"): "each have a check 'shared': name the paper with --paper",
    }
    for argv, message in refusals.items():
        assert cli.main(["verify", *argv, "--json", str(tmp_path / "no.json")]) == 2
        assert message in capsys.readouterr().err
    assert not ran and not (tmp_path / "no.json").exists()
    with pytest.raises(ValueError, match="toy has no check 'third'"):
        papers()["toy"].run_checks(full=False, only=["first", "third"])
    assert not ran


def test_a_stopped_verify_made_again_runs_only_the_checks_left(tmp_path, monkeypatch, capsys):
    from attnflow import _kept_checks

    ran, stop = [], {"second": KeyboardInterrupt, "third": RuntimeError}
    monkeypatch.setitem(
        papers(), "toy", _toy(*(_counted(name, ran, stop) for name in ("first", "second", "third")))
    )
    others = (_counted(name, ran, stop) for name in ("other", "second_too"))
    monkeypatch.setitem(papers(), "toy_too", _toy(*others, name="toy_too"))
    report = tmp_path / "v.json"
    kept = tmp_path / "v.kept"

    def verify(*argv):
        code = cli.main(["verify", *argv, "--json", str(report)])
        return code, [(c["name"], c["simulated"]) for c in json.loads(report.read_text())["checks"]]

    assert cli.main(["verify", "--paper", "toy", "--json", str(report)]) == 130  # a Ctrl-C in `second`
    assert ran == ["first", "second"] and not report.exists()
    assert sorted(path.name for path in (kept / "toy").glob("*.npz")) == ["first.npz"]
    # made again: `first` is taken as kept (its number is the first run's), `third` raises and is
    # a failure, not kept
    ran.clear()
    stop.pop("second")
    assert verify("--paper", "toy") == (1, [("first", 2.0), ("second", 2.0), ("third", "nan")])
    assert ran == ["second", "third"] and "first (kept from an earlier run" in capsys.readouterr().out
    assert not kept.exists()  # the report is written: nothing is kept any more
    # a report of other checks leaves the checks kept by a stopped run of toy_too for it
    stop["second_too"] = KeyboardInterrupt
    assert cli.main(["verify", "--paper", "toy_too", "--json", str(report)]) == 130
    assert verify("--check", "first")[0] == 0
    assert sorted(path.name for path in kept.glob("*/*.npz")) == ["other.npz"]
    # checks kept for other code are run again, with a warning
    monkeypatch.setattr(_kept_checks, "sources_digest", lambda packages: "other code")
    ran.clear()
    stop.pop("second_too")
    assert verify("--paper", "toy_too")[0] == 0
    assert "1 result kept in " in capsys.readouterr().err
    assert ran == ["other", "second_too"] and not kept.exists()
    # a folder of its own where the checks would be kept is refused before any work
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    ran.clear()
    assert cli.main(["verify", "--paper", "toy", "--json", str(report)]) == 2
    assert "holds something else" in capsys.readouterr().err and not ran
    assert (kept / "notes.txt").read_text() == "mine"


def test_a_stopped_reproduce_made_again_runs_only_the_checks_left(tmp_path, monkeypatch):
    from attnflow import _pieces, _report, _reproduce, _workers
    from attnflow import papers as registry_module

    ran, stop = [], {"second": KeyboardInterrupt}
    registry = {"toy": _toy(_counted("first", ran, stop), _counted("second", ran, stop))}
    for module in (_report, _reproduce):
        monkeypatch.setattr(module, "papers", lambda: registry)
    for module in (_pieces, _workers):
        monkeypatch.setattr(module, "loaded", registry.__getitem__)
    monkeypatch.setattr(registry_module, "catalog", lambda: catalog_of(registry))
    with pytest.raises(KeyboardInterrupt):
        _reproduce.reproduce(tmp_path, full=False, metadata={}, jobs=1)
    assert [path.name for path in (tmp_path / "verify.kept" / "toy").glob("*.npz")] == ["first.npz"]
    stop.clear()
    ran.clear()
    assert _reproduce.reproduce(tmp_path, full=False, metadata={}, jobs=1) == 0
    assert ran == ["second"] and not (tmp_path / "verify.kept").exists()
    report = json.loads((tmp_path / "verify.json").read_text())
    assert [check["name"] for check in report["checks"]] == ["first", "second"]


def test_a_check_that_raises_is_a_failure():
    def broken():
        raise RuntimeError("solver exploded")

    (check,) = theory.run_checks([broken])
    assert check.verdict == "fail" and "solver exploded" in check.note


@pytest.mark.parametrize(
    ("field", "value", "allowed", "word", "member"),
    [
        ("verdict", "ok", "one of 'pass', 'fail', 'deviation'", "deviation", theory.Verdict.deviation),
        ("bound", "above", "None or one of 'lower', 'upper'", "upper", theory.Bound.upper),
        ("provenance", "folklore", "one of 'paper', 'derived', 'recon'", "recon", theory.Provenance.recon),
    ],
)
def test_a_check_takes_the_words_of_its_kinds_and_refuses_others(field, value, allowed, word, member):
    fields = dict(
        paper="x", name="x", claim="c", predicted=1.0, simulated=1.0, error=0.0, tolerance=0.0, verdict="pass"
    )
    with pytest.raises(ValueError, match=f"^{field} must be {allowed}, got '{value}'$"):
        theory.Check(**fields | {field: value})
    check = theory.Check(**fields | {field: word})
    assert getattr(check, field) is member and check.to_dict()[field] == word


def test_a_declared_check_is_named_after_its_function_and_judged_by_its_declaration():
    calls = []

    @theory.claim("x is 1", method="by hand", tolerance=0.1, provenance="derived", bound="upper", sized=True)
    def x_is_one(full: bool = False, *, x: float = 1.05) -> theory.Measured:
        calls.append(full)
        return theory.Measured(1.0, x, theory.relative_error(1.0, x), note=f"x={x}")

    check = x_is_one()
    assert (check.name, check.claim, check.tolerance, check.note) == ("x_is_one", "x is 1", 0.1, "x=1.05")
    assert check.verdict is theory.Verdict.passed and check.error == pytest.approx(0.05)
    assert check.provenance is theory.Provenance.derived and check.bound is theory.Bound.upper
    assert x_is_one(x=1.5).verdict is theory.Verdict.failed  # a keyword of the function under test
    (made,) = theory.check_makers("p", [x_is_one], full=False)
    assert (made.__name__, made().paper, calls[-1]) == ("x_is_one", "p", False)
    assert theory.check_makers("p", [x_is_one], full=True)[0]().name == "x_is_one" and calls[-1] is True


def test_a_declared_check_that_is_not_sized_is_not_given_full_and_may_deviate():
    @theory.claim("y is 0", method="by hand", tolerance=0.0, expected_deviation="y is 1 here, for a reason")
    def y_is_zero() -> theory.Measured:
        return theory.Measured(0.0, 1.0, 1.0)

    (made,) = theory.check_makers("p", [y_is_zero], full=False)
    check = made()
    assert check.verdict is theory.Verdict.deviation and check.deviation == "y is 1 here, for a reason"

    @theory.claim("w is 0", method="by hand", tolerance=0.5)
    def w_is_zero(w: float = 2.0) -> theory.Measured:
        # a reason known only once measured takes the place of a declared one
        return theory.Measured(0.0, w, w, deviation=f"w is {w} here")

    assert w_is_zero().verdict is theory.Verdict.deviation and w_is_zero().deviation == "w is 2.0 here"
    assert w_is_zero(w=0.25).verdict is theory.Verdict.passed and w_is_zero(w=0.25).deviation == ""


def test_the_example_of_claim_runs():
    import doctest

    from theory import _check

    assert doctest.testmod(_check).failed == 0


@pytest.mark.parametrize("module_name", ["attnflow._markup", "attnflow._render", "attnflow.papers"])
def test_the_examples_of_the_command_lines_modules_run(module_name):
    import doctest

    result = doctest.testmod(importlib.import_module(module_name))
    assert result.attempted > 0 and result.failed == 0


def test_a_declaration_refuses_bad_words_before_anything_runs():
    with pytest.raises(
        ValueError, match="^provenance must be one of 'paper', 'derived', 'recon', got 'lore'$"
    ):
        theory.claim("z", method="by hand", tolerance=0.0, provenance="lore")


def test_the_table_shows_every_paper_and_check_name_whole():
    def check(paper, name, verdict):
        return theory.Check(
            paper=paper, name=name, claim="c", predicted=1.0, simulated=1.0, error=0.0,
            tolerance=0.0, verdict=verdict,
        )  # fmt: skip

    long_paper, long_name = "a_paper_named_at_length", "a_check_named_at_great_length_beyond_forty"
    from attnflow._render import text_table

    rows = text_table(
        [check(long_paper, "short", theory.Verdict.passed), check("p", long_name, theory.Verdict.deviation)]
    ).splitlines()
    assert rows[2].split()[:3] == ["PASS", long_paper, "short"]
    assert rows[3].split()[:3] == ["DEVIATION", "p", long_name]
    assert len({row.index("1") for row in rows[2:4]}) == 1  # the values start in one column


def test_a_bound_reads_as_a_relation_in_the_table_json_and_page(tmp_path, monkeypatch, capsys):
    from attnflow._report import _check_table

    @theory.claim("r in [0.5, 1]", method="by hand", tolerance=0.0, bound="lower", sized=True)
    def above(full: bool):
        return theory.Measured(predicted=0.5, simulated=0.96, error=0.0)

    @theory.claim("r <= 1", method="by hand", tolerance=0.0, bound="upper")
    def below():
        return theory.Measured(predicted=1.0, simulated=1.25, error=0.25)

    @theory.claim("1 = 1", method="by hand", tolerance=1e-12)
    def equal():
        return theory.Measured(predicted=1.0, simulated=1.0, error=0.0)

    monkeypatch.setitem(papers(), "toy", _toy(above, below, equal))
    assert cli.main(["verify", "--paper", "toy", "--json", str(tmp_path / "bounds.json")]) == 1
    rows = {
        line.split()[2]: line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith(("PASS", "FAIL"))
    }
    assert "0.96 >= bound 0.5" in rows["above"] and rows["above"].startswith("PASS")
    assert "1.25 <= bound 1" in rows["below"] and rows["below"].startswith("FAIL")
    assert "bound" not in rows["equal"]
    report = json.loads((tmp_path / "bounds.json").read_text())
    assert [(c["name"], c["bound"]) for c in report["checks"]] == [
        ("above", "lower"),
        ("below", "upper"),
        ("equal", None),
    ]
    page = _check_table("toy", [above(full=False), below(), equal()])
    assert "<td class='num'>bound ≥ 0.5</td><td class='num'>0.96</td>" in page
    assert "<td class='num'>bound ≤ 1</td><td class='num'>1.25</td>" in page
    assert "<td class='num'>1</td><td class='num'>1</td>" in page
    with pytest.raises(ValueError, match="bound must be None or one of"):
        theory.within("x", "x", "?", predicted=0.0, simulated=0.0, error=0.0, tolerance=0.0, bound="both")


def test_the_shard_comes_from_the_flag_or_a_slurm_job_array(monkeypatch, tmp_path, capsys):
    def shard(*extra):
        return _commands._shard(cli.build_parser().parse_args(["sweep", PAPER, "--out", "x", *extra]))

    assert shard() == (0, 1) and shard("--shard", "1/3") == (1, 3)
    for bad in ("3/3", "1", "a/b", "-1/2"):
        with pytest.raises(ValueError, match="--shard must be I/N"):
            shard(f"--shard={bad}")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "5")
    monkeypatch.setenv("SLURM_ARRAY_TASK_MIN", "3")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "4")
    assert shard() == (2, 4) and shard("--shard", "0/2") == (0, 2)
    level = papers()[PAPER].simulation(papers()[PAPER].default_level)
    rate = next(info for info in dynamics.settings(level) if info.traced and info.type is float)
    argv = ["sweep", PAPER, "--grid", f"{rate.name}={rate.default},{2 * rate.default}"]
    argv += ["--seeds", "256", "--out", str(tmp_path), "--overwrite"]  # 8 blocks, for 4 shards
    assert cli.main(argv) == 2
    assert "--overwrite in a shard would remove" in capsys.readouterr().err


def test_flags_added_after_the_one_thread_flag_are_still_read():
    """XLA reads every flag of `XLA_FLAGS` after the workers' one-thread flag (a flag it does not
    know ends the process), so flags a worker or a benchmark adds after it take effect."""
    flags = f"{_runtime.ONE_THREAD} --xla_no_such_flag=1"
    done = subprocess.run(
        [sys.executable, "-c", "import jax; jax.devices()"],
        env=os.environ | {"XLA_FLAGS": flags},
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "Unknown flag in XLA_FLAGS: --xla_no_such_flag=1" in done.stderr


_A_CLASS = ["list", "examples.custom_model:Retrieval"]
"""A command that sets up the runtime: listing a user's class imports it."""


def test_the_compile_cache_is_on_unless_turned_off(monkeypatch, tmp_path):
    monkeypatch.chdir(REPOSITORY)
    calls = []
    monkeypatch.setattr(_runtime, "use_compile_cache", lambda directory: calls.append(True))
    assert cli.main(_A_CLASS) == 0 and calls == [True]
    assert cli.main(["--no-compile-cache", *_A_CLASS]) == 0 and calls == [True]
    monkeypatch.setenv("ATTNFLOW_CACHE_DIR", str(tmp_path / "c"))
    assert _runtime.compile_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("ATTNFLOW_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _runtime.compile_cache_dir() == tmp_path / "attnflow" / "jax"


def test_the_command_line_sets_the_backend_optimization_unless_xla_flags_name_one(monkeypatch):
    monkeypatch.chdir(REPOSITORY)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    assert cli.main(_A_CLASS) == 0
    assert os.environ["XLA_FLAGS"] == f"--xla_cpu_multi_thread_eigen=false {_runtime.BACKEND_OPTIMIZATION}"
    monkeypatch.delenv("XLA_FLAGS")
    assert cli.main(_A_CLASS) == 0 and os.environ["XLA_FLAGS"] == _runtime.BACKEND_OPTIMIZATION
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=3")
    assert cli.main(_A_CLASS) == 0 and os.environ["XLA_FLAGS"] == "--xla_backend_optimization_level=3"


def test_the_command_line_package_has_no_import_circle():
    """The modules of `attnflow` import one another one way (imports inside functions count), and
    only the entry points import the command line."""
    import ast
    import pathlib

    folder = pathlib.Path(cli.__file__).parent
    edges = {}
    for path in folder.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                imported |= {node.module} if node.module else {alias.name for alias in node.names}
        edges[path.stem] = imported - {"__init__"}
    seen, done = set(), set()

    def visit(module, trail):
        assert module not in seen - done, f"an import circle: {' -> '.join([*trail, module])}"
        if module in done:
            return
        seen.add(module)
        for other in edges.get(module, ()):
            visit(other, [*trail, module])
        done.add(module)

    for module in edges:
        visit(module, [])
    entry_points = {"__main__", "_start"}  # python -m attnflow; the console script
    assert "cli" not in set().union(*(edges[m] for m in edges if m not in entry_points))


@pytest.mark.parametrize(
    ("statuses", "summary"),
    [
        ([0, 0], "converged x2 (index 0 x1, index 1 x1)"),
        ([0, 1], "converged x1 (index 0 x1), max_steps x1; no critical point nearby for the others"),
        ([1, 2], "max_steps x1, stalled x1; no critical point nearby for any run"),
    ],
)
def test_the_summary_of_critical_points_counts_each_ending(statuses, summary):
    found = xr.Dataset(
        {"critical_point.status": ("seed", statuses), "critical_point.index": ("seed", [0, 1])}
    )
    assert _commands._status_summary(found) == summary
