"""`--analyse phases,saddles` from the command line on levels of one's own: a flow past a saddle
of a two-parameter loss, and `examples.phase_levels.TeacherFlow`, the two-layer linear network
y = W₂W₁x on the teacher (3, 2, 1) from a start of 10⁻³, whose plateaus sit at the closed form's
saddles (losses 7, 2.5, 0.5 and the minimum 0; indices 9, 4, 1, 0)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
from attnflow.cli import main
from examples.phase_levels import PLATEAU_INDICES, PLATEAU_LOSSES


def _teacher_sweep(out, seeds: int, phases: str = "phases"):
    level = "examples.phase_levels:TeacherFlow"
    argv = ["sweep", level, "--seeds", str(seeds), "--analyse", f"{phases},saddles"]
    assert main([*argv, "--out", str(out)]) == 0
    return dynamics.load_sweep(out / "sweep.zarr")


def _complete(ds) -> list[int]:
    """The seeds whose four plateaus polish to the closed form's saddles (losses to 10⁻⁶)."""
    index, loss = ds["saddles.index"].values, ds["saddles.loss"].values
    return [
        seed
        for seed in range(ds.sizes["seed"])
        if int(ds["phases.count"].values[seed]) == 4
        and index[seed, :4].tolist() == PLATEAU_INDICES
        and np.allclose(loss[seed, :4], PLATEAU_LOSSES, rtol=0, atol=1e-6)
    ]


def _saddle_loss(theta):
    return 0.5 * theta[0] ** 2 - 0.5 * theta[1] ** 2 + 0.25 * theta[1] ** 4


class SaddleFlow(dynamics.AbstractSimulation):
    """The flow on L(x, y) = ½x² − ½y² + y⁴/4 from (1, 10⁻⁶(1 + u)): it nears the saddle at the
    origin along x, rests there, and leaves along y for the minimum at (0, 1)."""

    dtype: str = dynamics.dtype_param("float64")

    def run(self, key):
        start = jnp.array([1.0, 1e-6 * (1.0 + jax.random.uniform(key, (), self.float_dtype))])
        save = dynamics.Save(
            ts=jnp.logspace(-1.0, 2.0, 61),
            fn=lambda t, theta, args: {"loss": _saddle_loss(theta), "theta": theta},
        )
        return dynamics.gradient_flow(_saddle_loss, start, t1=100.0, save=save)

    def landscape(self, key):
        return dynamics.Landscape(_saddle_loss, saved=lambda values: values["theta"])


def test_saddles_from_the_command_line_polish_each_plateau_and_measure_the_escape(tmp_path, capsys):
    """The start polishes to the saddle 0.9 away (left along x, not its escape y), the rest to the
    same saddle (left along y), the end to the minimum at L = −¼."""
    out = tmp_path / "saddle"
    argv = [
        "sweep",
        f"{__name__}:SaddleFlow",
        "--seeds",
        "1",
        "--analyse",
        "phases,saddles",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    assert "plateaus converged x3 (index 0 x1, index 1 x2)" in capsys.readouterr().out
    ds = dynamics.load_sweep(out / "sweep.zarr").isel(seed=0, phase=[0, 1, 2])
    assert ds["saddles.index"].values.tolist() == [1, 1, 0]
    np.testing.assert_allclose(ds["saddles.loss"].values, [0.0, 0.0, -0.25], atol=1e-12)
    np.testing.assert_allclose(ds["saddles.distance"].values[0], np.exp(-0.1), rtol=1e-3)  # x(0.1)
    np.testing.assert_allclose(ds["saddles.escape_overlap"].values[:2], [0.0, 1.0], atol=1e-4)
    np.testing.assert_allclose(np.abs(ds["saddles.escape_direction"].values[1]), [0.0, 1.0], atol=1e-12)
    assert (out / "plots" / "saddles.index_histogram.png").exists()


@pytest.mark.slow
def test_the_teachers_saddles_are_found_from_the_command_line_on_the_defaults(tmp_path):
    """8 seeds on the defaults: in at least 7 every plateau polishes to its closed-form loss (to
    10⁻⁶) and index, with 0, 5, 8 and 9 flat directions (W₂A, A⁻¹W₁ keep the loss), and each
    run escapes a saddle inside the eigenspace of its most negative curvature; with
    `min_depth=2`, in all 8 (measured: seed 5's plateau at 2.5 is 2.6 deep), the runs kept
    polished again only where their plateaus moved."""
    out = tmp_path / "teacher"
    ds = _teacher_sweep(out, seeds=8)
    complete = _complete(ds)
    assert len(complete) >= 7
    status = ds["saddles.status"].values[complete, :4]
    assert (status == int(dynamics.landscape.CriticalPointStatus.converged)).all()
    assert (ds["saddles.escape_overlap"].values[complete, :3] > 0.9).all()
    assert ds["saddles.zero_count"].values[complete, :4].tolist() == [[0, 5, 8, 9]] * len(complete)
    assert ds["saddles.escape_direction"].shape == (8, ds.sizes["phase"], 18)
    assert _complete(_teacher_sweep(out, seeds=8, phases="phases:min_depth=2")) == list(range(8))


def test_saddles_needs_the_phases_and_a_landscape_that_says_where_the_parameters_are(tmp_path, capsys):
    """Refused before any run, saying what is missing."""
    argv = ["sweep", "examples.phase_levels:TeacherFlow", "--seeds", "1", "--out", str(tmp_path / "a")]
    assert main([*argv, "--analyse", "saddles"]) == 2
    assert "name both (--analyse phases,saddles)" in capsys.readouterr().err

    class Unsaid(SaddleFlow):
        def landscape(self, key):
            return dynamics.Landscape(_saddle_loss)

    with pytest.raises(ValueError, match=r"does not say where they are in its saves \(Landscape.saved\)"):
        dynamics.landscape.require_landscape(Unsaid(), "saddles", saved=True)
    assert not (tmp_path / "a").exists()
