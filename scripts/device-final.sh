#!/usr/bin/env bash
# On the GPU machine: the closing figures in one call after `device-real-witness.sh params`
# (same layout): the real PoRep partition's device step, the real 2 KiB PoRep sweep with each
# synthesis path, and a WinningPoSt probe under PoRep load.
set -uo pipefail
OUT=${OUT:-./device-logs}
mkdir -p "$OUT"
export CUZK_REQUIRE_GPU=1
W=/root/cuzk-work
B=$W/bin
export CUZK_PARAM_CACHE=$W/params FIL_PROOFS_PARAMETER_CACHE=$W/params
tar xJf .device/bins.tar.xz -C "$W"
step() {
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    printf '%-22s rc=%d %4ds\n' "$name" "$?" "$((SECONDS - t0))" | tee -a "$OUT/summary.txt"
}
step real_partitions 120 "$B/real_partitions" --kinds porep,winning --runs 3 --params "$W/params"
step cuda_msm 100 env CUZK_MSM_TEST_MAX_LOG=20 CUZK_MSM_TEST_CPU_MAX_LOG=20 "$B/cuda_msm" --test-threads=1
common=(--daemon-arg=--backend=cuda --daemon-arg=--param-dir="$W/params")
step bench_full 120 "$B/cuzk-client" bench --spawn -c 72 -j 24 --warmup 2 --kind porep \
    --manifest "$W/vec/porep.json" --log "$OUT/bench-full.log" "${common[@]}"
step bench_matrices 120 env CUZK_SYNTHESIS=matrices "$B/cuzk-client" bench --spawn -c 72 -j 24 \
    --warmup 2 --kind porep --manifest "$W/vec/porep.json" --log "$OUT/bench-matrices.log" "${common[@]}"
step probe 200 "$B/cuzk-client" bench --spawn --load porep:16 --probe winning:10 \
    --manifest-dir "$W/vec" --log "$OUT/probe-daemon.log" "${common[@]}" --daemon-arg=--synthesis-workers=8
sed -n '/^| kind/,$p' "$OUT/real_partitions.log"
grep -h "test result" "$OUT/cuda_msm.log"
grep -h -A2 "^J " "$OUT/bench_full.log" "$OUT/bench_matrices.log"
tail -25 "$OUT/probe.log"
cat "$OUT/summary.txt"
