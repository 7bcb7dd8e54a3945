#!/usr/bin/env bash
# On the device machine: compile the harness variants in parallel, then check and time them.
#   VARIANTS="3:4 3:3 2:4"  (log radix per thread : min blocks per SM; the first is checked
#   to 2^CHECK_MAX and timed with the pinned path, the others checked to 2^20 and timed at
#   TIME_LOGS_OTHERS)
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/harness}"
mkdir -p "$OUT"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
VARIANTS="${VARIANTS:-3:4 3:3 2:4}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
for v in $VARIANTS; do
    r=${v%%:*}; b=${v##*:}
    $NVCC -O3 -std=c++17 -arch=sm_90 -Xptxas -v -DNTT_REG_LOG_RADIX=$r -DNTT_REG_MIN_BLOCKS=$b \
        ntt_harness.cu -o "$OUT/h_${r}_${b}" >"$OUT/nvcc_${r}_${b}.log" 2>&1 &
done
wait
first=1
for v in $VARIANTS; do
    r=${v%%:*}; b=${v##*:}
    grep -A1 "regs_dif'" "$OUT/nvcc_${r}_${b}.log" | tail -1 | sed "s/^/R=$r B=$b dif: /"
done
for v in $VARIANTS; do
    r=${v%%:*}; b=${v##*:}
    if [[ $first == 1 ]]; then
        "$OUT/h_${r}_${b}" "${CHECK_MAX:-24}" "${TIME_LOGS:-20,22,24,26}" "${REPS:-10}" 1 2>&1 | tee "$OUT/run_${r}_${b}.log"
        first=0
    else
        "$OUT/h_${r}_${b}" 20 "${TIME_LOGS_OTHERS:-24,26}" "${REPS:-10}" 0 2>&1 | tee "$OUT/run_${r}_${b}.log"
    fi
done
