#!/usr/bin/env bash
# The GPU benchmark on a machine that has JAX (CUDA), diffrax, equinox, optax, xarray and PyTorch
# but not the rest of the project's dependencies, nor the project installed: installs into $SITE
# (default /tmp/site) the wheels of .whl/ (bench/gpu_wheels.sh) whose distributions the machine
# lacks, puts the checkout on the path, and runs $SCRIPT (default bench/gpu.py) into $OUT (default
# bench/results/gpu), with its log there. More arguments go to the script (for bench/gpu.py:
# --toy, --sections, --budget, --commit ...).
#
#     OUT=/some/folder bash bench/gpu_run.sh --commit <hash>
#     SCRIPT=bench/scan_snap/fig6_compile_probe.py bash bench/gpu_run.sh --budget 300
set -euo pipefail
cd "$(dirname "$0")/.."
SITE=${SITE:-/tmp/site}
SCRIPT=${SCRIPT:-bench/gpu.py}
OUT=${OUT:-bench/results/gpu}
mkdir -p "$OUT"
missing=()
for wheel in .whl/*.whl; do
    [ -e "$wheel" ] || continue
    name=$(basename "$wheel" | cut -d- -f1)
    python3 -c "import importlib.metadata as m, sys; m.version(sys.argv[1])" "$name" 2>/dev/null \
        || missing+=("$wheel")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing into $SITE: ${missing[*]}"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" "${missing[@]}"
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export MPLBACKEND=Agg
# Bytecode as an installation leaves it: a module is compiled once and read back by every later
# process, rather than compiled from source in each process the benchmarks time. Python writes it
# beside the sources where it may, and in $PYTHONPYCACHEPREFIX (default /tmp/pycache) where the
# machine's packages came without it in folders it may not write. The check below writes most of it
# before anything is timed; the few modules a command imports later are written by its first run.
unset PYTHONDONTWRITEBYTECODE
python3 -c "import importlib.util as u, os, sys, jax; sys.exit(not os.path.exists(u.cache_from_source(jax.__file__)))" \
    || export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/pycache}
python3 -c "import dynamics, tasks, theory, figures, attnflow.cli"  # fails here if something is missing
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || true
python3 "$SCRIPT" --out "$OUT" "$@" 2>&1 | tee "$OUT/$(basename "$SCRIPT" .py).log"
