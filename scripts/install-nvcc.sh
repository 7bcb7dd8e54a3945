#!/usr/bin/env bash
# Installs NVIDIA's CUDA compiler from its pip wheels into <repo>/.tools/cuda, so that a machine
# without a CUDA toolkit (a developer's laptop, CI) still compiles every kernel: a kernel that
# does not compile must fail the build, not be silently skipped.
#
# The versions are pinned to the CUDA 13.0 of the device we run on (driver 580); a newer nvcc
# would emit PTX that driver cannot JIT. Idempotent: does nothing when nvcc is already there.
# Prints the nvcc path on stdout (last line), so callers can `NVCC=$(scripts/install-nvcc.sh | tail -1)`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${CUZK_CUDA_TOOLS:-$root/.tools/cuda}"
nvcc="$dest/nvidia/cu13/bin/nvcc"

if [[ -x "$nvcc" ]] && "$nvcc" --version >/dev/null 2>&1; then
    echo "$nvcc"
    exit 0
fi

python="${PYTHON:-python3}"
mkdir -p "$dest"
"$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$dest" \
    nvidia-cuda-nvcc==13.0.88 \
    nvidia-cuda-runtime==13.0.96 \
    nvidia-cuda-cccl==13.0.85 \
    nvidia-nvvm==13.0.88 \
    nvidia-cuda-crt==13.0.88 >&2

if ! "$nvcc" --version >&2; then
    echo "install-nvcc: $nvcc does not run after install" >&2
    exit 1
fi
echo "$nvcc"
