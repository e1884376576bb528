"""Figs. 7 and 10 of Scan and Snap and their checks: the change rate of an attention map against a
loop, the rank correlation against scipy's, the WikiText directory found by its files, the
`text` level and the `--data` option of the command line, and both figures drawn end to end from a
WikiText directory."""

import dataclasses
import json
import os

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from attnflow import cli
from figures import _scan_snap_text as text_figures
from tasks import scan_snap
from theory.scan_snap import _text as text_checks

from .test_scan_snap_text import _write_wikitext


def _change_rate_loop(attention, steps):
    rates = []
    for k in range(len(steps) - 1):
        moved = [
            np.abs(attention[k + 1][index] - attention[k][index]).sum()
            for index in np.ndindex(attention.shape[1:-1])
        ]
        rates.append(np.mean(moved) / (steps[k + 1] - steps[k]))
    return np.array(rates)


def test_attention_change_rate_equals_a_loop():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(5, 2, 7, 7))
    attention = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    steps = np.array([0, 3, 10, 11, 40])
    rates = scan_snap.attention_change_rate(jnp.asarray(attention), jnp.asarray(steps))
    np.testing.assert_allclose(rates, _change_rate_loop(attention, steps), rtol=1e-6)


def test_a_frozen_map_has_rate_zero_and_a_moved_row_counts_two():
    eye = jnp.eye(3)
    assert np.all(np.asarray(scan_snap.attention_change_rate(jnp.stack([eye, eye]), jnp.array([0, 5]))) == 0)
    moved = eye.at[0].set(jnp.array([0.0, 1.0, 0.0]))  # one of three rows moves all its weight
    rate = scan_snap.attention_change_rate(jnp.stack([eye, moved]), jnp.array([0, 1]))
    np.testing.assert_allclose(rate, [2.0 / 3.0])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=3, max_size=12, unique=True), st.randoms())
def test_spearman_equals_scipy(y, random):
    x = list(range(len(y)))
    random.shuffle(x)
    np.testing.assert_allclose(text_checks.spearman(x, y), scipy.stats.spearmanr(x, y).statistic, atol=1e-12)


def test_spearman_is_minus_one_exactly_on_a_decreasing_sample():
    assert text_checks.spearman([1, 2, 3, 4, 5], [2.3, 2.0, 1.9, 1.7, 1.3]) == -1.0


def test_the_wikitext_variant_is_found_from_the_files(tmp_path):
    raw = _write_wikitext(tmp_path / "raw", "raw", num_train=20)
    assert scan_snap.detect_wikitext_variant(raw) == "raw"
    both = _write_wikitext(_write_wikitext(tmp_path / "both", "raw", num_train=20), "tokens", num_train=20)
    assert scan_snap.detect_wikitext_variant(both) == "tokens"
    with pytest.raises(ValueError, match=r"lacks wiki\.train\.tokens.*lacks wiki\.train\.raw"):
        scan_snap.detect_wikitext_variant(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        scan_snap.detect_wikitext_variant(tmp_path / "nowhere")


def test_the_text_level_is_listed(capsys):
    assert scan_snap.SIMULATIONS["text"] is scan_snap.TextSGD
    assert cli.main(["list", "scan_snap"]) == 0
    out = capsys.readouterr().out
    assert "text: tasks.scan_snap:TextSGD" in out
    assert "lr = 5.0  (float, traced; a finite number > 0)" in out


def test_steps_per_epoch_counts_the_training_windows(tmp_path):
    folder = _write_wikitext(tmp_path / "wt", num_train=240)
    sim = scan_snap.TextSGD(task=scan_snap.Corpus(source=str(folder)), batch_size=4, bptt=7)
    corpus = scan_snap.load_corpus(str(folder))
    rows = scan_snap.batchify(corpus.train, 4)
    assert sim.steps_per_epoch() == len(range(0, rows.shape[0] - 1, 7))


@pytest.mark.parametrize("command", ["figures", "reproduce"])
def test_data_that_is_not_wikitext_fails_before_any_work(command, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(scan_snap.TEXT_DATA_ENV, "")  # unset for the test, restored after it
    argv = [command, "--data", str(tmp_path), "--out", str(tmp_path / "out")]
    argv += ["scan_snap_fig10"] if command == "figures" else []
    assert cli.main(argv) == 2
    assert "--data: WikiText directory" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _tiny(sim: scan_snap.TextSGD) -> scan_snap.TextSGD:
    """The figures' simulations at a size the test suite affords (everything else kept)."""
    steps, every = (6, 6) if sim.num_steps == sim.every else (3, 1)  # Fig. 10: the end; Fig. 7: 4 saves
    return dataclasses.replace(
        sim,
        d_model=8,
        d_hid=8,
        batch_size=4,
        eval_batch_size=2,
        bptt=6,
        probe_window=1,
        num_steps=steps,
        every=every,
    )


@pytest.mark.slow
def test_figures_7_and_10_draw_from_a_wikitext_directory(tmp_path, monkeypatch, capsys):
    folder = _write_wikitext(tmp_path / "wikitext", "raw")
    monkeypatch.delenv(scan_snap.TEXT_DATA_ENV, raising=False)  # `--data` is passed, not set
    fig10_simulation, fig7_simulation = text_figures.fig10_simulation, text_figures.fig7_simulation
    monkeypatch.setattr(text_figures, "fig10_simulation", lambda full: (_tiny(fig10_simulation(full)[0]), 2))
    monkeypatch.setattr(
        text_figures, "fig7_simulation", lambda full, layers: _tiny(fig7_simulation(full, layers))
    )
    out = tmp_path / "figs"
    assert (
        cli.main(["figures", "scan_snap_fig7", "scan_snap_fig10", "--data", str(folder), "--out", str(out)])
        == 0
    )
    fig10 = json.loads((out / "scan_snap_fig10.json").read_text())
    assert scan_snap.TEXT_DATA_ENV not in os.environ
    assert fig10["config"]["simulation"]["task.source"] == str(folder.resolve())
    assert fig10["config"]["simulation"]["task.wikitext_variant"] == "raw"
    entropy = np.array(fig10["data"]["entropy"])
    assert entropy.shape == (5, 2) and np.all(np.isfinite(entropy))
    np.testing.assert_allclose(fig10["data"]["entropy_mean"], entropy.mean(1), rtol=1e-6)
    fig7 = json.loads((out / "scan_snap_fig7.json").read_text())
    assert fig7["data"]["steps"] == [0, 1, 2, 3]
    for layers in ("1", "3"):
        attention = np.array(fig7["data"]["attention"][layers])
        assert attention.shape == (4, 6, 6)
        np.testing.assert_allclose(attention.sum(-1), 1.0, rtol=1e-5)
        assert np.allclose(np.triu(attention, 1), 0.0)  # causal
        assert fig7["config"]["simulations"][layers]["num_layers"] == int(layers)
    assert all((out / f"scan_snap_fig{n}.{ext}").is_file() for n in (7, 10) for ext in ("png", "pdf"))


def test_a_data_directory_is_read_inside_its_block_only_and_checked_before_it(tmp_path, monkeypatch):
    """`DataOption.using` names the directory to the paper's figures and checks within the block
    (nested blocks restore the outer one), refuses a directory that is not WikiText before the
    block runs, and writes no environment variable; the variable a user sets is read outside."""
    option = scan_snap.PAPER.data
    monkeypatch.delenv(option.env, raising=False)
    first = _write_wikitext(tmp_path / "first", "raw")
    second = _write_wikitext(tmp_path / "second", "tokens")
    assert option.directory() is None and text_figures.text_corpus() == "quick"
    with option.using(first):
        assert text_figures.text_corpus() == str(first.resolve())
        with option.using(second):
            assert option.directory() == str(second.resolve())
        assert option.directory() == str(first.resolve()) and option.env not in os.environ
    assert option.directory() is None
    ran = []
    with pytest.raises(ValueError, match="WikiText directory"), option.using(tmp_path):
        ran.append(True)
    assert not ran
    monkeypatch.setenv(option.env, str(second))
    assert text_figures.text_corpus() == str(second)
