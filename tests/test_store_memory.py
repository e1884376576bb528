"""Memory bounded by a block: a command's peak resident memory does not grow with the number of
blocks of its sweep (every stage, writing, checking, summarising and plotting, reads the store a
block or a variable at a time)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dynamics
from tests._store_sims import Wide

ROOT = Path(__file__).resolve().parent.parent

BLOCK_BYTES = 64 * Wide().width * Wide().num_saves * 8
"""The bytes of one block of `Wide` at its defaults: 64 runs × 1,024 coordinates × 16 saves."""

GROWTH_BLOCKS = 8
"""What 56 more blocks may add to a command's peak: at most this many blocks' bytes (measured: 3 to
28 MiB, the plots drawing one line per seed; reading the whole store adds 56 blocks, 448 MiB)."""

_PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def _peak_bytes(argv: list[str]) -> int:
    """The peak resident bytes of `python -m attnflow <argv>`, run in a process of its own."""
    command = [sys.executable, "-c", _PEAK, sys.executable, "-m", "attnflow", *argv]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("command", ["simulate", "sweep"])
def test_a_command_s_peak_memory_does_not_grow_with_its_blocks(tmp_path, command):
    """8 blocks, then 64 blocks (512 MiB of runs) of the same program: the second's peak is
    within `GROWTH_BLOCKS` blocks of the first's (reading the whole store at the end, as
    `load_sweep` does, adds 56 blocks: 1007 MiB against 628 measured)."""
    grid = ["--grid", "num_saves=16"] if command == "sweep" else []
    peaks = [
        _peak_bytes(
            [
                command,
                "tests._store_sims:Wide",
                *grid,
                "--seeds",
                str(64 * blocks),
                "--out",
                str(tmp_path / str(blocks)),
            ]
        )  # fmt: skip
        for blocks in (8, 64)
    ]
    assert peaks[1] - peaks[0] <= GROWTH_BLOCKS * BLOCK_BYTES, (
        f"peaks {peaks[0] / 2**20:.0f} and {peaks[1] / 2**20:.0f} MiB"
    )


def test_open_sweep_reads_a_variable_only_when_asked_and_equals_load_sweep(tmp_path):
    store = tmp_path / "wide.zarr"
    dynamics.sweep(Wide(width=4, num_saves=3), {"width": [4]}, num_seeds=5, chunk_size=2, store=store)
    lazy = dynamics.store.open_sweep(store)
    assert not any(variable._in_memory for variable in lazy.variables.values() if variable.ndim > 1)
    loaded = dynamics.load_sweep(store)
    for name in loaded.data_vars:
        np.testing.assert_array_equal(lazy[name].values, loaded[name].values)
    assert json.loads(lazy.attrs["config"]) == json.loads(loaded.attrs["config"])
    (store / ".zattrs").write_text("{")
    with pytest.raises(ValueError, match="wide.zarr"):
        dynamics.store.open_sweep(store)
