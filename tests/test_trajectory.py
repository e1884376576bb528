"""Trajectories: saved runs load back identical; a failed write never leaves a loadable file."""

import json
import os
import stat

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics


def make_trajectory():
    def run(rate):
        return dynamics.gradient_flow(
            lambda p: 0.5 * jnp.sum(p["w"] ** 2),
            {"w": jnp.array([1.0, 2.0])},
            rates=rate,
            t1=50.0,
            save=dynamics.Save(
                ts=jnp.linspace(0.0, 50.0, 6),
                fn=lambda t, p, args: {"loss": 0.5 * jnp.sum(p["w"] ** 2), "w": p["w"]},
            ),
            events={"loss_below": lambda p: 0.5 * jnp.sum(p["w"] ** 2) < 1e-6},
        )

    runs = jax.vmap(run)(jnp.array([0.01, 1.0]))
    return dynamics.Trajectory.from_runs(runs, {"task": "toy", "rates": [0.01, 1.0]}, ("loss_below",))


def test_save_load_round_trip_is_identical(tmp_path):
    traj = make_trajectory()
    assert list(traj.stop_reasons) == ["completed", "event:loss_below"]
    assert set(traj.values) == {"loss", "w", "final/w"}
    assert traj.values["w"].shape == (2, 6, 2)
    path = traj.save(tmp_path / "sub" / "run.npz")
    back = dynamics.Trajectory.load(path)
    assert back.config == traj.config
    np.testing.assert_array_equal(back.times, traj.times)
    np.testing.assert_array_equal(back.stop_reasons, traj.stop_reasons)
    np.testing.assert_array_equal(back.t_stop, traj.t_stop)
    np.testing.assert_array_equal(back.num_steps, traj.num_steps)
    assert np.all(traj.num_steps > 0)
    assert back.values.keys() == traj.values.keys()
    for name in traj.values:
        np.testing.assert_array_equal(back.values[name], traj.values[name])
        assert back.values[name].dtype == traj.values[name].dtype


def test_crash_during_write_keeps_the_old_file(tmp_path, monkeypatch):
    traj = make_trajectory()
    path = traj.save(tmp_path / "run.npz")
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        traj.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["run.npz"]  # no temporary file left behind


def test_config_must_be_json():
    runs = jax.vmap(lambda r: dynamics.train(lambda p: p**2, jnp.array(1.0), dynamics.gd(r), num_steps=2))(
        jnp.array([0.1])
    )
    with pytest.raises(TypeError):
        dynamics.Trajectory.from_runs(runs, {"bad": object()})
    traj = dynamics.Trajectory.from_runs(runs, {"ok": 1})
    json.dumps(traj.config)


def test_saved_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = dynamics.save_npz_atomic(tmp_path / "a.npz", {"x": np.zeros(2)})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_damaged_or_foreign_file_is_refused_naming_it(tmp_path):
    good = make_trajectory().save(tmp_path / "good.npz")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:200])
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.arange(3))
    text = tmp_path / "notes.npz"
    text.write_text("not an archive")
    for path in (truncated, foreign, text, tmp_path / "missing.npz"):
        with pytest.raises(ValueError, match=f"{path.name} is not a trajectory written by attnflow"):
            dynamics.Trajectory.load(path)
