#!/usr/bin/env bash
# Downloads into .whl/ the wheels of the project's runtime dependencies (and theirs) that a GPU
# machine with JAX (CUDA), diffrax, equinox, optax, xarray and PyTorch may lack, for CPython 3.12
# on x86-64 Linux, at the versions the project is developed with; bench/gpu_run.sh installs there
# the ones the machine lacks. The folder ignores itself in git (.whl/.gitignore): wheels are not
# committed.
#
#     bash bench/gpu_wheels.sh      # from the repository root, where pip can reach the index
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
echo '*' > .whl/.gitignore
WHEELS=(
    # the sweep store: zarr and what it needs
    zarr==3.1.6 numcodecs==0.16.6 donfig==0.8.1.post1 google-crc32c==1.9.0
    PyYAML==6.0.4 typing_extensions==4.16.0 packaging==26.4
    # the max-margin QPs
    clarabel==0.11.1 cffi==2.1.1 pycparser==3.12
    # progress bars; the figures
    tqdm==4.70.1
    matplotlib==3.11.2 contourpy==1.3.3 cycler==0.12.1 fonttools==4.68.0 kiwisolver==1.5.1
    pillow==13.0.0 pyparsing==3.3.3 python-dateutil==4.0.0 tzdata==2026.6
)
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "${WHEELS[@]}"
du -sh .whl
