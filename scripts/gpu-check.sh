#!/usr/bin/env bash
# Runs the GPU tests and the NTT benchmark on a machine with a GPU, from binaries built
# elsewhere (the device machine has no Rust toolchain). Layout expected under $BIN
# (default .device): field, cuda_ntt, cuda_master (test executables), gpu_ntt (benchmark).
# Logs go to $OUT (default ./gpu-logs); a short table is printed last.
#
#   scripts/gpu-check.sh                    # everything, default sizes
#   CUZK_CUDA_TEST_LOGS=1-20 scripts/gpu-check.sh
set -uo pipefail
BIN="${BIN:-.device}"
OUT="${OUT:-./gpu-logs}"
mkdir -p "$OUT"
BENCH_SIZES="${BENCH_SIZES:-20,22,24,26}"
status=0

nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv >"$OUT/nvidia-smi.txt" 2>&1 || true
cat "$OUT/nvidia-smi.txt"

run() {
    local name=$1; shift
    local t0=$SECONDS
    "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    printf '%-14s rc=%d %4ds\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$OUT/summary.txt"
    [[ $rc == 0 ]] || status=1
    return $rc
}

# Fast checks first, then timings, then the long bit-identity sweep (CPU reference bound).
run field timeout "${FIELD_TIMEOUT:-120}" "$BIN/field" --nocapture --test-threads=1
run gpu_ntt timeout "${BENCH_TIMEOUT:-200}" "$BIN/gpu_ntt" "$BENCH_SIZES" --reps "${BENCH_REPS:-10}"
if [[ -x "$BIN/cuda_master" ]]; then
    run cuda_master timeout 300 "$BIN/cuda_master" --nocapture --test-threads=1
fi
run cuda_ntt timeout "${SWEEP_TIMEOUT:-300}" "$BIN/cuda_ntt" --nocapture --test-threads=1 ${SWEEP_FILTER:-}

echo "== failures / skips =="
grep -h -E "SKIP|panicked|FAILED|error" "$OUT"/*.log | head -20
echo "== tests =="
grep -h -E "^test |identical" "$OUT"/field.log "$OUT"/cuda_ntt.log | tail -40
echo "== bench =="
sed -n '/== summary/,$p' "$OUT"/gpu_ntt*.log
cat "$OUT/summary.txt"
exit $status
