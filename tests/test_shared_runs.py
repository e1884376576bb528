"""A sweep that several pieces of one job make alike is made once (`dynamics.store.shared_store`, the
folder `attnflow reproduce` names to its pieces), with the numbers of the sweep in memory."""

import numpy as np
import pytest

import dynamics
from attnflow import _pieces
from attnflow._kept_checks import code_key
from attnflow._pieces import runs_key, shared_runs
from attnflow.papers import catalog
from tests._store_sims import SlowDecay

GRID = {"rate": [1.0, 2.0]}


def test_two_pieces_sharing_a_sweep_run_it_once_with_the_numbers_in_memory(tmp_path, monkeypatch):
    log = tmp_path / "runs.log"
    sim = SlowDecay(log=str(log))
    with dynamics.store.sharing_runs(tmp_path / "shared"):
        store = dynamics.store.shared_store(sim, GRID, num_seeds=3)
        first = dynamics.sweep(sim, GRID, num_seeds=3, store=store)
        again = dynamics.store.shared_store(sim, GRID, num_seeds=3)
        second = dynamics.sweep(sim, GRID, num_seeds=3, store=again)
    assert len(log.read_text().splitlines()) == 2 * 3  # each (rate, seed) ran once
    assert dynamics.store.shared_store(sim, GRID, num_seeds=3) is None
    alone = dynamics.sweep(SlowDecay(), GRID, num_seeds=3)
    for ds in (first, second):
        np.testing.assert_array_equal(ds["value"].values, alone["value"].values)


def test_reproduce_names_a_folder_of_its_own_and_leaves_nothing_in_it(tmp_path, monkeypatch):
    folder = tmp_path / "shared_runs"
    earlier = dynamics.store.save_sweep(
        dynamics.sweep(SlowDecay(), GRID, num_seeds=1), folder / "earlier.zarr"
    )
    with shared_runs(folder) as given, dynamics.store.sharing_runs(given):
        assert not earlier.exists()  # an earlier run's stores go before the pieces start
        store = dynamics.store.shared_store(SlowDecay(), GRID, num_seeds=2)
        assert store.parent == folder
        dynamics.sweep(SlowDecay(), GRID, num_seeds=2, store=store)
    assert not folder.exists()
    assert dynamics.store.shared_store(SlowDecay(), GRID, num_seeds=2) is None


def test_the_shared_runs_of_a_stopped_command_are_resumed_by_the_same_code_only(tmp_path, monkeypatch):
    log = tmp_path / "runs.log"
    sim = SlowDecay(log=str(log))
    folder = tmp_path / "shared_runs"

    def piece():
        return dynamics.sweep(
            sim, GRID, num_seeds=3, store=dynamics.store.shared_store(sim, GRID, num_seeds=3)
        )

    def runs_made():
        return len(log.read_text().splitlines())

    with pytest.raises(KeyboardInterrupt), shared_runs(folder) as given, dynamics.store.sharing_runs(given):
        first = piece()
        raise KeyboardInterrupt  # the command stopped before its other pieces
    assert runs_made() == 6 and len(list(folder.glob("*.zarr"))) == 1
    with (
        shared_runs(folder) as given,
        dynamics.store.sharing_runs(given),
    ):  # made again by the same code: the runs are read back, not made
        np.testing.assert_array_equal(piece()["value"].values, first["value"].values)
        assert runs_made() == 6
    assert not folder.exists()  # every piece ended: nothing kept

    with pytest.raises(KeyboardInterrupt), shared_runs(folder) as given, dynamics.store.sharing_runs(given):
        piece()
        raise KeyboardInterrupt
    monkeypatch.setattr(_pieces, "code_key", lambda: {"sources": "other code"})
    with shared_runs(folder) as given, dynamics.store.sharing_runs(given):
        assert not list(folder.glob("*.zarr"))  # other code's runs go before the pieces start
        np.testing.assert_array_equal(piece()["value"].values, first["value"].values)
        assert runs_made() == 3 * 6


def test_the_runs_key_holds_the_data_directories_of_the_commands_papers_alone():
    """Every paper with a data option counts by default; a command of other papers' pieces keys
    its runs on none of them (and need not import them)."""
    with_data = [name for name, record in catalog()["papers"].items() if record["data"] is not None]
    assert with_data and set(runs_key()["data"]) == set(with_data)
    others = [name for name in catalog()["papers"] if name not in with_data]
    assert others and runs_key(None, others) == {"shared runs of": code_key(), "data": {}}
    assert list(runs_key(None, [*others, with_data[0]])["data"]) == with_data[:1]
