#!/usr/bin/env bash
# On the GPU machine (device tool): the real-witness checks and figures, in phases so that
# each call stays under the tool's 10-minute limit while the machine (and the parameters it
# generated) stays warm between calls. Binaries come prebuilt in .device/bins.tar.xz (the
# device has no Rust toolchain); logs go to $OUT, a short table is printed last.
#
#   scripts/device-real-witness.sh params   # 2 KiB parameters + fresh sectors (all kinds)
#   scripts/device-real-witness.sh check    # real partitions CPU vs CUDA, Filecoin bytes, MSM tests
#   scripts/device-real-witness.sh bench    # gpu_msm distributions, daemon sweeps (porep, synthetic)
#   scripts/device-real-witness.sh abc        # params + vectors if missing; cuda_abc; daemon
#                                             # sweep with a/b/c on the device
#   scripts/device-real-witness.sh abc-bench  # the same sweep with a/b/c on the host, and with
#                                             # full synthesis; synth_compare
#   scripts/device-real-witness.sh abc-check  # cuda_filecoin, all kinds, both a/b/c paths
#   scripts/device-real-witness.sh abc-final  # params + vectors if missing; abc-check; a
#                                             # WinningPoSt probe under PoRep load, a/b/c on
#                                             # the device
#   scripts/device-real-witness.sh stages     # params; the PoRep J=24 sweep with the MSM sort
#                                             # in stages, then in series; the probe
#   scripts/device-real-witness.sh packed     # params; the PoRep J=24 sweep with the aux
#                                             # packed, then plain (CUZK_PACK_AUX=0)
#   scripts/device-real-witness.sh between    # PoRep + WinningPoSt params; the probe under
#                                             # PoRep load, --urgent-between-phases on, off
#   scripts/device-real-witness.sh pools      # NTT/H tests and figures; params (vectors from
#                                             # .device/vec if carried); cuda_filecoin; the
#                                             # PoRep J=24 sweep; the probe (urgent pools)
set -uo pipefail
phase=${1:?phase: params | check | bench | all | final}
if [[ $phase == all ]]; then
    bash "$0" check
    CUZK_MSM_PROFILE=1 timeout 120 "/root/cuzk-work/bin/real_partitions" --kinds porep --runs 1 \
        --params /root/cuzk-work/params >"${OUT:-./device-logs}/profile-porep.log" 2>&1
    grep MSM_PROFILE "${OUT:-./device-logs}/profile-porep.log" | tail -8
    exec bash "$0" bench
fi
OUT=${OUT:-./device-logs}
mkdir -p "$OUT"
export CUZK_REQUIRE_GPU=1
W=/root/cuzk-work
B=$W/bin
export CUZK_PARAM_CACHE=$W/params FIL_PROOFS_PARAMETER_CACHE=$W/params
mkdir -p "$W/params"
if [[ ! -x $B/cuzk-daemon || .device/bins.tar.xz -nt $B/cuzk-daemon ]]; then
    tar xJf .device/bins.tar.xz -C "$W"
fi
status=0
step() {
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    printf '%-22s rc=%d %4ds\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$OUT/summary.txt"
    [[ $rc == 0 ]] || status=1
}

# One daemon sweep of real 2 KiB PoRep C2, 24 in flight: abc_bench NAME [client args].
abc_bench() {
    local name=$1; shift
    step "bench_abc_$name" 120 "$B/cuzk-client" bench --spawn -c 72 -j 24 --warmup 2 \
        --kind porep --manifest "$W/vec/porep.json" --log "$OUT/bench-abc-$name.log" \
        --daemon-arg=--backend=cuda --daemon-arg=--param-dir="$W/params" "$@"
    grep -h -A2 "^J " "$OUT/bench_abc_$name.log"
}

case $phase in
params)
    nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
        --format=csv | tee "$OUT/nvidia-smi.txt"
    step params 420 "$B/cuzk-client" params generate --sector-size 2KiB --dir "$W/params"
    step vectors 120 "$B/cuzk-client" gen-vanilla all --sector-size 2KiB --out "$W/vec"
    ls "$W/vec" >"$OUT/vectors.txt"
    ;;
check)
    step real_partitions 300 "$B/real_partitions" --runs 5 --params "$W/params" \
        --dump-witness "$W/porep-aux.bin"
    step cuda_filecoin 200 env CUZK_CUDA_FIL_KINDS=porep,winning,window,snap \
        "$B/cuda_filecoin" --nocapture --test-threads=1
    step cuda_master 120 "$B/cuda_master" --nocapture --test-threads=1
    step cuda_msm 300 env CUZK_MSM_TEST_MAX_LOG=22 CUZK_MSM_TEST_CPU_MAX_LOG=${CPU_MAX_LOG:-20} \
        "$B/cuda_msm" --nocapture --test-threads=1
    sed -n '/^| kind/,$p' "$OUT/real_partitions.log"
    grep -h -E "^test |test result|panicked" "$OUT"/cuda_*.log | tail -20
    ;;
bench)
    step gpu_msm 300 "$B/gpu_msm" --g1 20,22,24 --g2 20,22 --reps 5 --cpu-max-log 20 \
        --dist uniform,bits:0.5,bits:0.99,porep,one,equal,sparse:0.01,few:16 \
        --porep-witness "$W/porep-aux.bin"
    manifest="$W/vec/porep.json"
    step bench_porep 300 "$B/cuzk-client" bench --spawn -c 72 -j 24 --warmup 2 --kind porep \
        --manifest "$manifest" --log "$OUT/bench-porep.log" \
        --daemon-arg=--backend=cuda --daemon-arg=--param-dir="$W/params"
    sed -n '/^| MSM/,$p' "$OUT/gpu_msm.log"
    grep -A4 "^J " "$OUT/bench_porep.log"
    ;;
pools)
    [[ -s .device/vec/porep.json && ! -s $W/vec/porep.json ]] && cp -r .device/vec "$W/vec"
    [[ -s $W/vec/porep.json ]] || step vectors 120 "$B/cuzk-client" gen-vanilla all \
        --sector-size 2KiB --out "$W/vec"
    step cuda_ntt 120 "$B/cuda_ntt" --test-threads=1
    step cuda_master 120 "$B/cuda_master" --test-threads=1
    step cuda_abc 60 "$B/cuda_abc" --test-threads=1
    step gpu_ntt_cpu 120 "$B/gpu_ntt" 20 --reps 5
    step gpu_ntt 120 env CUZK_BENCH_NO_CPU=1 "$B/gpu_ntt" 22,24,26 --reps 5
    grep -h -E "^\|" "$OUT/gpu_ntt_cpu.log" "$OUT/gpu_ntt.log"
    step params 330 "$B/cuzk-client" params generate --sector-size 2KiB --dir "$W/params"
    step cuda_filecoin 200 env CUZK_CUDA_FIL_KINDS=porep,winning,window,snap \
        "$B/cuda_filecoin" --nocapture --test-threads=1
    grep -h -E "^test |test result" "$OUT/cuda_filecoin.log"
    abc_bench device
    step probe 200 "$B/cuzk-client" bench --spawn --load porep:16 --probe winning:60 \
        --manifest-dir "$W/vec" --log "$OUT/probe-daemon.log" --daemon-arg=--backend=cuda \
        --daemon-arg=--param-dir="$W/params" --daemon-arg=--synthesis-workers=8
    tail -12 "$OUT/probe.log"
    ;;
between)
    # The WinningPoSt probe under real 2 KiB PoRep load with the daemon's
    # --urgent-between-phases on, then off; PoRep and WinningPoSt parameters only, sectors
    # carried in .device/vec (gen-vanilla porep, winning).
    step params 330 "$B/cuzk-client" params generate --sector-size 2KiB --kinds porep,winning \
        --dir "$W/params"
    for between in true false; do
        step "probe-$between" 200 "$B/cuzk-client" bench --spawn --load porep:16 \
            --probe winning:60 --manifest-dir .device/vec --param-dir "$W/params" \
            --log "$OUT/probe-daemon-$between.log" --daemon-arg=--backend=cuda \
            --daemon-arg=--param-dir="$W/params" --daemon-arg=--synthesis-workers=8 \
            --daemon-arg=--urgent-between-phases="$between"
        echo "== urgent_between_phases=$between"
        tail -8 "$OUT/probe-$between.log"
    done
    ;;
stages)
    # Real 2 KiB PoRep through the daemon with the MSM sort in stages beside the
    # accumulation (the default) and in series (CUZK_MSM_STAGES=1), then the WinningPoSt
    # probe under PoRep load; same binaries, sectors and parameters.
    [[ -s $W/vec/porep.json ]] || step vectors 120 "$B/cuzk-client" gen-vanilla all \
        --sector-size 2KiB --out "$W/vec"
    step params 330 "$B/cuzk-client" params generate --sector-size 2KiB --dir "$W/params"
    abc_bench staged
    CUZK_MSM_STAGES=1 abc_bench serial
    step probe 200 "$B/cuzk-client" bench --spawn --load porep:16 --probe winning:60 \
        --manifest-dir "$W/vec" --log "$OUT/probe-daemon.log" --daemon-arg=--backend=cuda \
        --daemon-arg=--param-dir="$W/params" --daemon-arg=--synthesis-workers=8
    tail -12 "$OUT/probe.log"
    for r in staged serial; do
        echo "== $r"
        grep -h -E "NTT_END|GPU_END" "$OUT/bench-abc-$r.log" | tail -4
    done
    ;;
packed)
    # Real 2 KiB PoRep through the daemon with the aux packed for the bus (the default) and
    # plain (CUZK_PACK_AUX=0), same binaries, sectors and parameters.
    [[ -s .device/vec/porep.json && ! -s $W/vec/porep.json ]] && cp -r .device/vec "$W/vec"
    [[ -s $W/vec/porep.json ]] || step vectors 120 "$B/cuzk-client" gen-vanilla all \
        --sector-size 2KiB --out "$W/vec"
    step params 330 "$B/cuzk-client" params generate --sector-size 2KiB --dir "$W/params"
    abc_bench packed
    export CUZK_PACK_AUX=0
    abc_bench plain
    unset CUZK_PACK_AUX
    for r in packed plain; do
        echo "== $r"
        grep -h -E "NTT_END|GPU_END" "$OUT/bench-abc-$r.log" | tail -4
    done
    ;;
abc | abc-final)
    if [[ ! -s $W/vec/porep.json ]]; then
        step params 330 "$B/cuzk-client" params generate --sector-size 2KiB --dir "$W/params"
        step vectors 120 "$B/cuzk-client" gen-vanilla all --sector-size 2KiB --out "$W/vec"
    fi
    if [[ $phase == abc-final ]]; then
        bash "$0" abc-check || status=1
        step probe 200 "$B/cuzk-client" bench --spawn --load porep:16 --probe winning:60 \
            --manifest-dir "$W/vec" --log "$OUT/probe-daemon.log" --daemon-arg=--backend=cuda \
            --daemon-arg=--param-dir="$W/params" --daemon-arg=--synthesis-workers=8 \
            --daemon-arg=--abc-on-device
        tail -12 "$OUT/probe.log"
        exit $status
    fi
    step cuda_abc 60 "$B/cuda_abc" --nocapture --test-threads=1
    abc_bench device --daemon-arg=--abc-on-device
    grep -h -E "^test |test result" "$OUT/cuda_abc.log"
    ;;
abc-bench)
    # The same binaries and sectors: a/b/c on the synthesis threads (the default), full
    # synthesis (the previous default) beside the device run of `abc`; synth_compare's
    # full vs witness-only synthesis on this host.
    abc_bench host --daemon-arg=--abc-on-device=false
    abc_bench full --daemon-arg=--synthesis=full --daemon-arg=--abc-on-device=false
    step synth_compare 200 "$B/synth_compare" --vectors "$W/vec" --runs 3 --synthetic 20
    sed -n '/^circuit/,$p' "$OUT/synth_compare.log"
    ;;
abc-check)
    step cuda_filecoin 420 env CUZK_CUDA_FIL_KINDS=porep,winning,window,snap \
        "$B/cuda_filecoin" --nocapture --test-threads=1
    grep -h -E "^test |test result|GPU == CPU" "$OUT/cuda_filecoin.log"
    ;;
final)
    step real_partitions 120 "$B/real_partitions" --kinds porep,winning --runs 3 --params "$W/params"
    step cuda_msm 100 env CUZK_MSM_TEST_MAX_LOG=20 CUZK_MSM_TEST_CPU_MAX_LOG=20 \
        "$B/cuda_msm" --test-threads=1
    common=(--daemon-arg=--backend=cuda --daemon-arg=--param-dir="$W/params")
    for path in full matrices; do
        step "bench_$path" 120 env CUZK_SYNTHESIS=$path "$B/cuzk-client" bench --spawn -c 72 \
            -j 24 --warmup 2 --kind porep --manifest "$W/vec/porep.json" \
            --log "$OUT/bench-$path.log" "${common[@]}"
    done
    step probe 200 "$B/cuzk-client" bench --spawn --load porep:16 --probe winning:60 \
        --manifest-dir "$W/vec" --log "$OUT/probe-daemon.log" "${common[@]}" \
        --daemon-arg=--synthesis-workers=8
    sed -n '/^| kind/,$p' "$OUT/real_partitions.log"
    grep -h -A2 "^J " "$OUT/bench_full.log" "$OUT/bench_matrices.log"
    tail -12 "$OUT/probe.log"
    ;;
esac
grep -h -E "SKIP|panicked|FAILED" "$OUT"/*.log | head -10
cat "$OUT/summary.txt"
exit $status
