#!/usr/bin/env bash
# On the device machine: run a PREBUILT fpd_bench (FP64 vs integer Fp product throughput; the
# device machine has no nvcc). Build it first on the dev machine (see fpd_bench.cu's header):
#   .tools/cuda/nvidia/cu13/bin/nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v \
#       -L.tools/cuda/nvidia/cu13/lib kernels/bench/fpd_bench.cu -o .device/fpd_bench
# then, from the repository root there:  bash kernels/bench/run_fpd_bench.sh .device/fpd_bench
# The rates' cycle figures use the max SM clock nvidia-smi reports; the log goes to $OUT.
set -uo pipefail
BIN="${1:?usage: run_fpd_bench.sh BIN}"
OUT="${OUT:-/tmp/fpd_bench}"
mkdir -p "$OUT"
[ -x "$BIN" ] || chmod +x "$BIN" 2>/dev/null || { echo "cannot execute $BIN"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
"$BIN" "$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1)" | tee "$OUT/fpd_bench.log"
rc=${PIPESTATUS[0]}
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
exit "$rc"
