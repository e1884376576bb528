"""Progress inside long runs: meters change no number, a scan's bar reaches its end and closes."""

import re
import time

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
from dynamics import _progress

from .test_dynamics_simulation import Decay


def _flow(rate):
    return dynamics.ode_flow(lambda t, y, args: -rate * y, jnp.array(1.0), t1=5.0)


def _scan(rate):
    return dynamics.train(
        lambda w: 0.5 * w**2, jnp.array(1.0), dynamics.gd(rate), num_steps=250, save=dynamics.Save(every=50)
    )


@pytest.mark.slow
def test_meters_change_no_number(monkeypatch):
    monkeypatch.setattr(_progress, "on_terminal", lambda: True)  # where the bars inside are drawn
    rates = jnp.array([0.1, 0.5, 1.0])
    for run in (_flow, _scan):
        quiet, _ = dynamics.run_many(run, rates)
        shown, _ = dynamics.run_many(run, rates, progress=True)
        np.testing.assert_array_equal(quiet.final, shown.final)
        np.testing.assert_array_equal(quiet.values, shown.values)


def test_a_scan_bar_advances_to_the_end_and_closes(capsys):
    with dynamics.progress_inside():
        assert _progress.meters_on()
        run = jax.jit(jax.vmap(_scan))(jnp.array([0.1, 0.2]))
    jax.effects_barrier()
    assert not _progress.meters_on()
    assert not _progress._bars  # closed at the last step
    assert "250/250" in capsys.readouterr().err
    assert run.ts.shape == (2, 6)


def test_meters_are_off_by_default_and_a_flow_shows_diffrax_bar(capsys):
    assert isinstance(_progress.flow_meter(), diffrax.NoProgressMeter)
    with dynamics.progress_inside():
        jax.jit(lambda: _flow(1.0))()
    jax.effects_barrier()
    assert "100.00%" in capsys.readouterr().err


def test_a_sweep_in_a_log_writes_one_line_per_block_and_no_bar(capsys):
    dynamics.sweep(Decay(), {"rate": [0.5, 1.0, 2.0]}, num_seeds=2, chunk_size=1, progress=True)
    err = capsys.readouterr().err
    assert "\r" not in err and "%" not in err
    lines = err.splitlines()
    # 3 rates × 2 blocks of one seed
    assert [line.split(" (")[0] for line in lines] == [f"blocks: {n}/6 done" for n in range(1, 7)]
    assert all(re.search(r"\([\d.]+ s, about [\d.]+ s left\)$", line) for line in lines[:-1]), lines
    assert re.search(r"\([\d.]+ s\)$", lines[-1]), lines  # nothing left


def test_a_resumed_sweep_counts_the_blocks_it_found_written(tmp_path, capsys, monkeypatch):
    def rerun():
        dynamics.sweep(
            Decay(), {"rate": [0.5, 1.0, 2.0]}, num_seeds=2, chunk_size=1, store=store, progress=True
        )
        return capsys.readouterr().err

    store = tmp_path / "s.zarr"
    rerun()
    (store / ".attnflow_units_done" / "0").unlink()  # block 0 is to be run again
    lines = rerun().splitlines()
    assert [line.split(" (")[1].split("; ")[1:] for line in lines] == [
        [],
        *([f"1 run here, {n} found written)"] for n in range(1, 6)),
    ]
    monkeypatch.setattr(_progress, "on_terminal", lambda: True)
    assert "0 run here, 6 found written" in rerun()


def test_a_sweep_on_a_terminal_draws_its_bars(capsys, monkeypatch):
    monkeypatch.setattr(_progress, "on_terminal", lambda: True)
    dynamics.sweep(Decay(), {"rate": [0.5, 1.0, 2.0]}, num_seeds=2, chunk_size=1, progress=True)
    err = capsys.readouterr().err
    assert "blocks: 100%" in err and "100.00%" in err  # the blocks' bar and a flow's own


def test_a_log_says_that_a_long_piece_goes_on_with_the_time_left(monkeypatch, capsys):
    """A piece that runs longer than the heartbeat gets a line while it runs: before any piece ends,
    that there is no estimate yet; after, the time left at the pace of those done."""
    monkeypatch.setattr(_progress, "HEARTBEAT", 0.2)
    with dynamics.progress_over(2, "blocks", "block", True) as bar:
        time.sleep(0.8)
        bar.update()
        time.sleep(0.8)
        bar.update()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("blocks: 0/2 done (")
    assert lines[0].endswith("so far; no block done yet to estimate the time from)"), lines
    after = [line for line in lines if line.startswith("blocks: 1/2 done") and "since a block ended" in line]
    assert after and re.search(r"about [\d.]+ s left\)$", after[0]), lines
    assert lines[-1].startswith("blocks: 2/2 done")


class _Clock:
    """A stand-in for `time.perf_counter` that moves only when told."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _ended(clock: _Clock, capsys, ends: list[tuple[float, int]], workers: int = 1) -> list[str]:
    """The lines of pieces of costs 6, 3 and 1, each `(time, piece)` of `ends` one ending."""
    with dynamics.progress_over(3, "pieces", "piece", True, weights=[6.0, 3.0, 1.0], workers=workers) as bar:
        for now, piece in ends:
            clock.now = now
            bar.update(piece=piece)
    return capsys.readouterr().err.splitlines()


def test_with_weights_the_time_left_is_the_work_left_at_the_pace_of_the_work_done(monkeypatch, capsys):
    """Three pieces of costs 6, 3 and 1: after the first (6 of 10) in 30 s, 20 s are left, where
    counting pieces alike would say 60 s; the lines come on a terminal too (no bar)."""
    clock = _Clock()
    monkeypatch.setattr(_progress.time, "perf_counter", clock)
    monkeypatch.setattr(_progress, "on_terminal", lambda: True)
    assert _ended(clock, capsys, [(30.0, 0), (45.0, 1), (50.0, 2)]) == [
        "pieces: 1/3 done (30 s, about 20 s left)",
        "pieces: 2/3 done (45 s, about 5.0 s left)",
        "pieces: 3/3 done (50 s)",
    ]
    with dynamics.progress_over(3, "pieces", "piece", True) as bar:
        clock.now = 80.0
        bar.update()
    drawn = capsys.readouterr().err  # no weights, on a terminal: tqdm's bar, not our lines
    assert "piece/s" in drawn and "done (" not in drawn
    with dynamics.progress_over(2, "pieces", "piece", False, weights=[1.0, 2.0]) as bar:
        bar.update(piece=0)  # switched off: counts, says nothing
    assert capsys.readouterr().err == ""


def test_with_workers_the_pieces_running_are_laid_out_at_the_pace_of_those_done(monkeypatch, capsys):
    """Two workers, pieces of costs 6, 3 and 1 taken in order: when the piece of cost 3 ends at
    15 s (5 s a unit), the one of cost 6 has 15 s to go and the last, started then, 5 s: 15 s are
    left, where the work left at the pace of the work done (7 units at 5 s) says 35 s."""
    clock = _Clock()
    monkeypatch.setattr(_progress.time, "perf_counter", clock)
    assert _ended(clock, capsys, [(15.0, 1), (20.0, 2), (30.0, 0)], workers=2) == [
        "pieces: 1/3 done (15 s, about 15 s left)",
        "pieces: 2/3 done (20 s, about 10 s left)",
        "pieces: 3/3 done (30 s)",
    ]


@pytest.mark.parametrize("jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_pieces_say_as_each_ends_how_many_are_done_and_the_time_left(jobs, capsys):
    from attnflow._workers import run_pieces

    results, _ = run_pieces([(abs, (-2,)), (abs, (3,)), (abs, (-4,))], jobs, None, costs=[5.0, 1.0, 1.0])
    assert results == [2, 3, 4]
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "pieces: 1/3 done",
        "pieces: 2/3 done",
        "pieces: 3/3 done",
    ]
    with pytest.raises(ValueError, match="one cost per piece: 1 costs for 2 pieces"):
        run_pieces([(abs, (1,)), (abs, (2,))], 1, None, costs=[1.0])
