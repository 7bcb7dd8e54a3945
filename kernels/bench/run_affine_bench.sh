#!/usr/bin/env bash
# On the device machine, from the repository root: build and run kernels/bench/affine_bench.cu
# (affine bucket accumulation with batched inversion against the crate's XYZZ bucket pass:
# correctness on edge cases first, then timing). Logs under $OUT; the summary table last.
#   OUT=$OUT bash kernels/bench/run_affine_bench.sh
# Knobs: LOG_N (26), NB_LOGS (22,20), REPS (5), BPSM (0,1: blocks per SM of the affine grid,
# 0 = occupancy), NVCC, EXTRA_FLAGS (e.g. -DAFFINE_VARIANTS="V(256,2)"), BIN (a prebuilt
# binary: skip the build).
set -uo pipefail
OUT="${OUT:-/tmp/affine_bench}"
mkdir -p "$OUT"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
BIN="${BIN:-}"
if [ -z "$BIN" ]; then
    BIN="$OUT/affine_bench"
    start=$(date +%s)
    # shellcheck disable=SC2086
    if ! "$NVCC" -O3 -std=c++17 -arch=sm_90 -Xptxas -v ${EXTRA_FLAGS:-} \
        kernels/bench/affine_bench.cu -o "$BIN" >"$OUT/nvcc.log" 2>&1; then
        echo "build failed:"; tail -40 "$OUT/nvcc.log"; exit 1
    fi
    echo "built in $(( $(date +%s) - start )) s"
fi
# Registers / spills of the bucket kernels (ptxas prints the entry, then its properties).
demangle() { if command -v c++filt >/dev/null; then c++filt; else cat; fi; }
if [ -s "$OUT/nvcc.log" ]; then
    grep -A3 "Compiling entry function" "$OUT/nvcc.log" | grep -v "Compile time" | demangle |
        grep -A3 "Compiling entry.*\(accumulate_affine_kernel\|k_acc_xyzz\)" |
        sed -n 's/.*entry function .\(.*\). for .*/\1/p; s/.*\(Used [0-9]* registers\).*/   \1/p; s/^ *\([0-9]* bytes stack frame.*\)/   \1/p' |
        tee "$OUT/ptxas_summary.txt"
fi
"$BIN" "${LOG_N:-26}" "${NB_LOGS:-22,20}" "${REPS:-5}" "${BPSM:-0,1}" 2>&1 | tee "$OUT/run.log"
rc=${PIPESTATUS[0]}
rm -f "$OUT/affine_bench"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv,noheader
echo "== summary (exit $rc)"
grep -h "FAIL" "$OUT/run.log" | head -20
[ -s "$OUT/ptxas_summary.txt" ] && cat "$OUT/ptxas_summary.txt"
grep -h '^|' "$OUT/run.log"
grep -h '^checks:' "$OUT/run.log"
exit "$rc"
