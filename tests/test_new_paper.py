"""A new paper is its own three files, `tasks/<paper>/`, `theory/<paper>/` and `figures/<paper>.py`:
every command finds it, with no other file touched (here a throw-away paper, `toy_paper`, written
to a temporary folder that the three packages are extended with)."""

import doctest
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import dynamics
import figures
import tasks
import theory
from attnflow import _catalog, cli
from attnflow.papers import catalog, papers

TASK = """
import jax
import jax.numpy as jnp

import dynamics
import tasks


class Decay(dynamics.AbstractSimulation):
    k: float = dynamics.param(1.0, dynamics.Interval.positive(), doc="decay rate", traced=True)
    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        y0 = jax.random.uniform(key, (), self.dtype, 1.0, 2.0)
        save = dynamics.Save(ts=jnp.linspace(0.0, 1.0, 3), fn=lambda t, y, args: {"y": y})
        return dynamics.ode_flow(lambda t, y, args: -self.k * y, y0, t1=1.0, save=save)


PAPER = tasks.PaperInfo(
    name="toy_paper", title="A toy paper (2026)", levels={"flow": Decay}, cost={"checks": 1, "figures": 1}
)
"""

THEORY = """
import numpy as np

import dynamics
import theory
from tasks.toy_paper import Decay


@theory.claim("y(1) = y(0) e^{-k}", method="by hand", tolerance=1e-6, provenance="derived", sized=True)
def decay_is_exponential(full: bool):
    run = dynamics.simulate(Decay(k=2.0), num_seeds=8 if full else 2)
    simulated = float(np.mean(run["y"].values[:, -1] / run["y"].values[:, 0]))
    predicted = float(np.exp(-2.0))
    return theory.Measured(predicted, simulated, theory.relative_error(predicted, simulated))


CHECKS = [decay_is_exponential]
"""

FIGURES = """
import matplotlib.pyplot as plt
import numpy as np

from figures import caption, named_figures, save_figure


@caption("The decay $e^{-t}$ on five points. Look for the curve falling.")
def fig1(out_dir, full):
    fig, ax = plt.subplots()
    t = np.linspace(0.0, 1.0, 5)
    ax.plot(t, np.exp(-t))
    return save_figure(fig, out_dir, "toy_paper_fig1", data={"t": t}, config={"full": full})


FIGURES = named_figures(__name__, [fig1])
"""


@pytest.fixture
def toy_paper(tmp_path, monkeypatch):
    """The three packages extended with the toy paper's folders; the registry found afresh. The
    catalog of the papers before is kept first, as an earlier `attnflow list` would have."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    catalog()
    files = [(tasks, "toy_paper/__init__.py", TASK), (theory, "toy_paper/__init__.py", THEORY)]
    for package, name, source in [*files, (figures, "toy_paper.py", FIGURES)]:
        folder = tmp_path / package.__name__
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(source))
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    papers.cache_clear()
    yield tmp_path
    papers.cache_clear()


def test_a_new_paper_is_found_by_every_command(toy_paper, capsys):
    out = toy_paper / "out"
    assert cli.main(["list"]) == 0
    assert "toy_paper: A toy paper (2026)" in capsys.readouterr().out
    assert cli.main(["list", "toy_paper"]) == 0
    assert "flow: tasks.toy_paper:Decay" in capsys.readouterr().out

    assert cli.main(["simulate", "toy_paper", "--seeds", "3", "--out", str(out)]) == 0
    (store,) = out.glob("toy_paper_flow_3seeds_*.zarr")
    assert dynamics.load_sweep(store)["y"].shape == (3, 3)

    assert (
        cli.main(["sweep", "toy_paper", "--grid", "k=1,2", "--seeds", "2", "--out", str(out / "sweep")]) == 0
    )
    ds = dynamics.load_sweep(out / "sweep" / "sweep.zarr")
    ratio = (ds["y"].isel(save=-1) / ds["y"].isel(save=0)).mean("seed").values
    np.testing.assert_allclose(ratio, np.exp(-np.array([1.0, 2.0])), rtol=1e-6)

    report = out / "verify.json"
    assert cli.main(["verify", "--paper", "toy_paper", "--jobs", "1", "--json", str(report)]) == 0
    (check,) = json.loads(report.read_text())["checks"]
    assert (check["paper"], check["name"], check["verdict"]) == ("toy_paper", "decay_is_exponential", "pass")

    capsys.readouterr()
    assert cli.main(["figures", "toy_paper_fig1", "--out", str(out / "figs")]) == 0
    assert sorted(p.name for p in (out / "figs").iterdir()) == ["toy_paper_fig1.json", "toy_paper_fig1.pdf",
                                                                "toy_paper_fig1.png"]  # fmt: skip
    said = capsys.readouterr().out.splitlines()  # named as it starts, as a check is, then its files
    assert said[0] == "  toy_paper: toy_paper_fig1" and said[1].startswith("[figure] toy_paper_fig1: ")


@pytest.mark.parametrize("declared", [tasks.PaperInfo, figures.named_figures])
def test_the_examples_of_the_declarations_run(declared):
    result = doctest.testmod(sys.modules[declared.__module__], optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


PLUGIN = (
    TASK.replace('name="toy_paper"', 'name="toy_plugin"')
    + THEORY.replace("from tasks.toy_paper import Decay\n", "")
    + FIGURES.replace("toy_paper_fig1", "toy_plugin_fig1")
)
"""A paper in a package of its own: the toy paper's three files as one module, `toy_plugin`."""


def _package(name: str, source: str, entry: str) -> dict[str, str]:
    """The files of an installed package `name` (one module, `source`) declaring `entry` in the
    entry-point group `attnflow.papers`, by their paths relative to the folder it is installed in
    (as `pip install` of a package with `[project.entry-points."attnflow.papers"]` writes them)."""
    info = f"{name}-0.1.dist-info"
    return {
        f"{name}.py": textwrap.dedent(source),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
        f"{info}/entry_points.txt": f"[attnflow.papers]\n{entry}\n",
    }


def _install(folder, name: str, source: str, entry: str) -> None:
    """The package `name` written into `folder` as if installed there."""
    for path, text in _package(name, source, entry).items():
        (folder / path).parent.mkdir(exist_ok=True)
        (folder / path).write_text(text)


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """`toy_plugin` installed on the Python path, the registry found afresh."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _install(tmp_path, "toy_plugin", PLUGIN, "toy_plugin = toy_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    papers.cache_clear()
    yield tmp_path
    papers.cache_clear()
    sys.modules.pop("toy_plugin", None)


def test_an_installed_paper_joins_every_command(installed_plugin, capsys):
    out = installed_plugin / "out"
    assert cli.main(["list"]) == 0
    assert "toy_plugin: A toy paper (2026)" in capsys.readouterr().out
    assert cli.main(["list", "toy_plugin"]) == 0
    assert "flow: toy_plugin:Decay" in capsys.readouterr().out
    report = out / "verify.json"
    assert cli.main(["verify", "--paper", "toy_plugin", "--jobs", "1", "--json", str(report)]) == 0
    (check,) = json.loads(report.read_text())["checks"]
    assert (check["paper"], check["name"], check["verdict"]) == ("toy_plugin", "decay_is_exponential", "pass")
    assert cli.main(["figures", "toy_plugin_fig1", "--out", str(out / "figs")]) == 0
    assert (out / "figs" / "toy_plugin_fig1.pdf").exists()
    kept = _catalog.kept_catalog()
    assert "toy_plugin" in kept["papers"]  # the catalog covers it, and its code:
    (installed_plugin / "toy_plugin.py").write_text(PLUGIN + "\n# changed\n")
    assert _catalog.kept_catalog() is None


def _wheel(folder, name: str, source: str) -> str:
    """A wheel of the package `name` (one module, `source`) declaring its paper in the entry-point
    group `attnflow.papers`, as a build of its pyproject.toml would make it; its path."""
    info = f"{name}-0.1.dist-info"
    files = _package(name, source, f"{name} = {name}")
    files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    path = folder / f"{name}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, text in files.items():
            wheel.writestr(member, text)
        wheel.writestr(f"{info}/RECORD", "".join(f"{member},,\n" for member in [*files, f"{info}/RECORD"]))
    return str(path)


def test_a_paper_pip_installed_apart_runs_through_reproduce_into_its_report(tmp_path):
    """A paper in a package of its own, installed by pip into a folder of its own, made by
    `attnflow reproduce --paper` in another process: its check and its figure are in the report,
    and no other paper."""
    site = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--target"]
    subprocess.run([*install, str(site), _wheel(tmp_path, "toy_plugin", PLUGIN)], check=True)
    out = tmp_path / "out"
    env = os.environ | {"PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    command = ["reproduce", "--paper", "toy_plugin", "--out", str(out), "--jobs", "1"]
    made = subprocess.run(
        [sys.executable, "-m", "attnflow", *command], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert made.returncode == 0, made.stderr[-2000:]
    (check,) = json.loads((out / "verify.json").read_text())["checks"]
    assert (check["paper"], check["name"], check["verdict"]) == ("toy_plugin", "decay_is_exponential", "pass")
    report = (out / "index.html").read_text()
    assert "<section id='toy_plugin'>" in report and "toy_plugin_fig1.png" in report
    assert "<section id='scan_snap'>" not in report


@pytest.mark.parametrize(
    ("name", "source", "entry", "message"),
    [
        ("other", PLUGIN, "other = other", "declares the paper 'toy_plugin': a paper is named after"),
        ("clash", PLUGIN, "scan_snap = clash", "attnflow has a paper of that name already"),
        ("broken", "raise RuntimeError('no')", "broken = broken", "cannot load the paper 'broken'"),
        ("empty", "X = 1", "empty = empty", "holds no PAPER"),
    ],
)
def test_an_installed_paper_that_cannot_join_is_refused_in_one_line(
    tmp_path, monkeypatch, capsys, name, source, entry, message
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _install(tmp_path, name, source, entry)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)  # a module of that name another test imported is not this one
    papers.cache_clear()
    try:
        assert cli.main(["list"]) == 2
        err = capsys.readouterr().err
        assert message in err and f"the package '{name}'" in err and "Traceback" not in err
    finally:
        papers.cache_clear()
        sys.modules.pop(name, None)
