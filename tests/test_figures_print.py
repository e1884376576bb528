"""`figures.printed_size`: a figure's smallest drawn text at print width, against sizes set by hand."""

import json

import matplotlib.pyplot as plt
import pytest

import figures


def _figure(width: float, tick: float, label: float) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(width, 3))
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=tick)
    ax.set_xlabel("step", fontsize=label)
    return fig


@pytest.mark.parametrize(("tick", "label"), [(9, 11), (12, 8)])
def test_a_figure_narrower_than_print_width_prints_its_smallest_text_at_its_own_size(tick, label):
    fig = _figure(4, tick, label)
    size = figures.printed_size(fig)
    plt.close(fig)
    assert size["width_in"] < figures.PRINT_WIDTH
    assert size["smallest_text_pt"] == min(tick, label)


def test_a_wide_figure_is_scaled_down_to_print_width():
    fig = _figure(13, 10, 10)
    size = figures.printed_size(fig)
    plt.close(fig)
    assert size["width_in"] > figures.PRINT_WIDTH
    assert size["smallest_text_pt"] == pytest.approx(10 * figures.PRINT_WIDTH / size["width_in"], abs=0.01)


def test_only_drawn_text_counts():
    """Hidden text, empty text and ticks outside the view do not make a figure unreadable."""
    fig = _figure(4, 10, 10)
    ax = fig.axes[0]
    ax.text(0.5, 0.5, "hidden", fontsize=3, visible=False)
    ax.set_title("", fontsize=2)
    ax.set_xticks([0.5, 5.0], ["in view", "out of view"])
    ax.set_xlim(0, 1)
    ax.get_xticklabels()[1].set_fontsize(3)
    size = figures.printed_size(fig)
    plt.close(fig)
    assert size["smallest_text_pt"] == 10


def test_save_figure_records_how_the_figure_prints(tmp_path):
    fig = _figure(13, 10, 10)
    expected = figures.printed_size(fig)
    figures.save_figure(fig, tmp_path, "wide", data={"x": [1]}, config={})
    assert json.loads((tmp_path / "wide.json").read_text())["print"] == expected
