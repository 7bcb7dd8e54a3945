#!/usr/bin/env bash
# The main job: build the daemon and client (with the CUDA kernels embedded), start the daemon
# on its embedded defaults — the GPU when there is one, else the CPU — prove a few synthetic
# jobs, and print their timings and where the TIMELINE went. Extra args go to `cuzk-client demo`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export NVCC="$(bash scripts/install-nvcc.sh | tail -1)"
cargo build --release -j"${CARGO_BUILD_JOBS:-2}" -p cuzk-daemon -p cuzk-client
exec target/release/cuzk-client demo "$@"
