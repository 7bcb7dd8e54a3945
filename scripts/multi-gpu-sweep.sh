#!/usr/bin/env bash
# Throughput on one GPU against all GPUs of the machine, same binaries, same run: the ratio
# shows how well partitions spread over devices. Binaries from $BIN (default .device, built
# elsewhere: the GPU machine has no Rust); logs, GetStatus samples and the sweep tables go
# to $OUT. While each sweep runs, GetStatus is sampled so the per-device current job is on
# record.
#
#   BIN=.device OUT=/tmp/mgpu LOG_SIZE=18 JOBS=48 CONC=8,16 scripts/multi-gpu-sweep.sh
set -uo pipefail
BIN="${BIN:-.device}"
OUT="${OUT:-./mgpu-logs}"
LOG_SIZE="${LOG_SIZE:-18}"
PARTS="${PARTS:-2}"
JOBS="${JOBS:-48}"
CONC="${CONC:-8,16}"
WORKERS="${WORKERS:-$(( $(nproc) / 2 ))}"
PARAMS="${PARAMS:-$OUT/params}"
mkdir -p "$OUT" "$PARAMS"
export FIL_PROOFS_PARAMETER_CACHE="$PARAMS"
nvidia-smi -L | tee "$OUT/gpus.txt"
ngpu=$(nvidia-smi -L | wc -l)

sweep() {
    local name=$1 devices=$2 port=$3
    local cfg="$OUT/$name.toml" addr="127.0.0.1:$port"
    printf 'listen = "%s"\n[engine]\ndevices = %s\nsynthesis_workers = %s\nparam_dir = "%s"\n' \
        "$addr" "$devices" "$WORKERS" "$PARAMS" >"$cfg"
    "$BIN/cuzk-daemon" --config "$cfg" --data-dir "$OUT/data-$name" 2>"$OUT/$name.daemon.log" &
    local daemon=$!
    for _ in $(seq 100); do
        "$BIN/cuzk-client" --addr "$addr" status >/dev/null 2>&1 && break
        sleep 0.2
    done
    (while kill -0 "$daemon" 2>/dev/null; do
        "$BIN/cuzk-client" --addr "$addr" --json status >>"$OUT/$name.status.jsonl" 2>/dev/null
        sleep 0.5
    done) &
    local sampler=$!
    "$BIN/cuzk-client" --addr "$addr" bench --kind synthetic --log-size "$LOG_SIZE" \
        --partitions "$PARTS" -c "$JOBS" -j "$CONC" --log "$OUT/$name.daemon.log" \
        --param-dir "$PARAMS" | tee "$OUT/$name.sweep.txt"
    kill "$daemon"; wait "$daemon" 2>/dev/null; kill "$sampler" 2>/dev/null
}

sweep one-gpu "[0]" 9831
if [[ $ngpu -gt 1 ]]; then
    sweep all-gpus "[]" 9832
fi
echo "== GetStatus samples with a job on every device (all-gpus) =="
grep -c '"current_job":"job' "$OUT/all-gpus.status.jsonl" 2>/dev/null || true
for f in "$OUT"/*.sweep.txt; do echo "== $f"; tail -n 8 "$f"; done
