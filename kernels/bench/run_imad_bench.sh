#!/usr/bin/env bash
# On the device machine: build and run imad_bench.cu (instruction and Fp-product throughput).
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/imad_bench}"
mkdir -p "$OUT"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
$NVCC -O3 -std=c++17 -arch=sm_90 imad_bench.cu -o "$OUT/imad_bench" || exit 1
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
"$OUT/imad_bench" "$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1)" | tee "$OUT/imad_bench.log"
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
rm -f "$OUT/imad_bench"
