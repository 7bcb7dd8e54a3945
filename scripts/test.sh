#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need on a fresh machine, then
# runs the whole test suite. GPU tests skip with a message where there is no GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# nvcc from NVIDIA's wheels, so every kernel is compiled here too: a broken kernel fails.
export NVCC="$(bash scripts/install-nvcc.sh | tail -1)"
# Parameter files (synthetic and Filecoin test sizes) are generated once and kept here.
export CUZK_PARAM_CACHE="${CUZK_PARAM_CACHE:-$HOME/.cache/cuzk/params}"
mkdir -p "$CUZK_PARAM_CACHE"
jobs="${CARGO_BUILD_JOBS:-2}"
# A clean clone builds once: the incremental cache would only take disk (~12 GB).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

cargo fmt --all -- --check
# Lints as a maintainer reads them: every crate and target, warnings are errors.
cargo clippy --workspace --all-targets -j"$jobs" -- -D warnings
# The field arithmetic of the kernels, compiled for the host (no GPU): the integer Fp products
# and the FP64 one against CIOS, and the batch-affine bucket accumulation against XYZZ sums
# (kernels/bench/*_host_check.cpp), exact or a failure.
checks="$(mktemp -d)"
for c in fp_host_check fpd_host_check affine_host_check; do
    g++ -O2 -std=c++17 "kernels/bench/$c.cpp" -o "$checks/$c"
    "$checks/$c" | tail -1
done
rm -rf "$checks"
cargo test --workspace -j"$jobs" --no-fail-fast 2>&1 | tee "${CUZK_TEST_LOG:-/tmp/cuzk-test.log}"
if [[ -x scripts/check-waterfall.sh ]] || [[ -f scripts/check-waterfall.sh ]]; then
    bash scripts/check-waterfall.sh
fi
