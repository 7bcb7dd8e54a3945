#!/usr/bin/env bash
# On the device machine: compile harness variants in parallel, then check and time them.
#   VARIANTS="name:R:B:INLINE:STREAM[:P0] ..." (log points per thread, min blocks per SM,
#   twiddles loaded at the butterfly, streaming data hints, Fr's p = 1 mod 2^32 reduction). The first variant is checked to
#   2^CHECK_MAX and timed at TIME_LOGS with the pinned path; the others are checked to 2^20
#   and timed at TIME_LOGS_OTHERS. PLANS="24:8,6,10 ..." times the first variant with other
#   pass splits.
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/harness}"
mkdir -p "$OUT"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
VARIANTS="${VARIANTS:-a:3:4:0:0}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
for v in $VARIANTS; do
    IFS=: read -r name r b inl st p0 <<<"$v"
    $NVCC -O3 -std=c++17 -arch=sm_90 -Xptxas -v -DNTT_REG_LOG_RADIX=$r -DNTT_REG_MIN_BLOCKS=$b \
        -DNTT_REG_TWIDDLE_INLINE=$inl -DNTT_REG_STREAMING=$st -DFR_P0_IS_ONE=${p0:-1} \
        ntt_harness.cu -o "$OUT/h_$name" >"$OUT/nvcc_$name.log" 2>&1 &
done
wait
first=
for v in $VARIANTS; do
    IFS=: read -r name r b inl st p0 <<<"$v"
    echo "== $v: $(grep -A1 "regs_dif'" "$OUT/nvcc_$name.log" | tail -1)"
    if [[ -z $first ]]; then
        first=$name
        "$OUT/h_$name" "${CHECK_MAX:-24}" "${TIME_LOGS:-20,22,24,26}" "${REPS:-10}" 1 2>&1 | tee "$OUT/run_$name.log"
    else
        "$OUT/h_$name" 20 "${TIME_LOGS_OTHERS:-24,26}" "${REPS:-10}" 0 2>&1 | tee "$OUT/run_$name.log"
    fi
done
for p in ${PLANS:-}; do
    L=${p%%:*}
    echo "== plan 2^$L: ${p#*:}"
    env "NTT_PLAN_$L=${p#*:}" "$OUT/h_$first" 0 "$L" "${REPS:-10}" 0 2>&1 | tail -1
done
