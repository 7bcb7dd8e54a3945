#!/usr/bin/env bash
# On the device machine: build the MSM bucket-pass harness (G1 and G2 as two binaries, in
# parallel), then check and time every Fp-product variant. Logs under $OUT.
#   LOGS=20,22,24 G2_LOGS=20,22 REPS=10 bash kernels/bench/run_msm_harness.sh
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/msm_harness}"
mkdir -p "$OUT"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
FLAGS="-O3 -std=c++17 -arch=sm_90 -Xptxas -v ${EXTRA_FLAGS:-}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
$NVCC $FLAGS -DNO_G2 msm_harness.cu -o "$OUT/msm_g1" >"$OUT/nvcc_g1.log" 2>&1 &
$NVCC $FLAGS -DNO_G1 msm_harness.cu -o "$OUT/msm_g2" >"$OUT/nvcc_g2.log" 2>&1 &
wait
ls -la "$OUT"
"$OUT/msm_g1" "${LOGS:-20,22,24}" "${REPS:-10}" "" 2>&1 | tee "$OUT/run_g1.log"
"$OUT/msm_g2" "" "${REPS:-10}" "${G2_LOGS:-20,22}" 2>&1 | tee "$OUT/run_g2.log"
rm -f "$OUT/msm_g1" "$OUT/msm_g2"
echo "== summary"
grep -h '^|' "$OUT/run_g1.log" | head -2
grep -h '^| G' "$OUT/run_g1.log" "$OUT/run_g2.log"
