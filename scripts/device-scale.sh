#!/usr/bin/env bash
# On the GPU machine (device tool): production scale, issue #14. A PoRep-shaped synthetic set
# at 2^27 (a 32 GiB partition's domain) is generated there (it cannot be carried: ~47 GB),
# loaded, and proven 10 partitions a proof. Phases keep each call under the tool's 10
# minutes; the machine (and /root/cuzk-work) stays warm between back-to-back calls.
# Binaries come prebuilt in .device/bins.tar.xz (scripts/device-bundle.sh).
#
#   scripts/device-scale.sh check        # GPU tests (fixed-base, MSM split, paramgen GPU == CPU)
#   scripts/device-scale.sh small LOG    # generate + prove a 10-partition set at 2^LOG (J=1,2)
#   scripts/device-scale.sh gen LOG      # generate the 2^LOG set (GPU), time it; load benchmark
#   scripts/device-scale.sh prove LOG    # the 10-partition bench on an existing set, J=1 and J=2
#   scripts/device-scale.sh probe LOG    # gen; real 2 KiB WinningPoSt timed alone and beside
#                                        # LOAD (2) PoRep-shaped 2^LOG x 10 jobs (bench --probe),
#                                        # --urgent-between-phases on and off (BETWEEN),
#                                        # GAP ms of spread waits before each probe job
#   scripts/device-scale.sh levels LOG   # final's bench alone (LEVELS, NAME for the logs)
#   scripts/device-scale.sh stagecount LOG  # gen; J=2 x 2 proofs per H MSM stage count (COUNTS)
#   scripts/device-scale.sh product LOG  # HARNESS=1: the bucket-pass harness first (built
#                                        # there); gen, then J=2 x 2 proofs with each daemon
#                                        # in DAEMONS (default cuzk-daemon, cuzk-daemon-alt:
#                                        # device-bundle.sh ALT_NVCC_FLAGS; an entry
#                                        # daemon:VAR=value runs it with that variable);
#                                        # TESTS: GPU tests run first
#   scripts/device-scale.sh count LOG    # MSM tests with the count split per bucket set, gen,
#                                        # final's bench
#   scripts/device-scale.sh all LOG      # gen, then prove with J=1,2 in one sweep (one call)
#   scripts/device-scale.sh again LOG    # MSM split tests, gen, one J=2 level (a shorter call)
#   scripts/device-scale.sh abc LOG      # cuda_abc, gen, J=2 with a, b, c evaluated on the
#                                        # device from the shape's matrices, then on the host
#   scripts/device-scale.sh pinned LOG   # gen, then final's bench with the packed aux in pinned
#                                        # buffers and with CUZK_PIN_AUX=0 (heap, staged)
#   scripts/device-scale.sh cores LOG    # pinned's benches with RAYON_NUM_THREADS=${THREADS:-14}
#   scripts/device-scale.sh stages LOG   # MSM tests, gen, final's bench with the sort in stages
#                                        # (default) and in series (CUZK_MSM_STAGES=1)
#   scripts/device-scale.sh profile LOG  # gen, final's bench profiled in stages and in series
#   scripts/device-scale.sh ahead LOG    # the copy-stream order (cuda_upload, and the test
#                                        # built before the fix, .device/cuda_upload_prefix,
#                                        # expected to fail), cuda_master with two threads x3,
#                                        # the MSM tests; gen; J=2 x 2 proofs by default,
#                                        # with H's sort ahead (CUZK_MSM_AHEAD=1), and with it
#                                        # and CUZK_POOL_KEEP_GIB=120 (DAEMONS, as in product,
#                                        # separated by spaces; VAR=value+VAR=value); final's
#                                        # bench (FINAL=0: none)
#   scripts/device-scale.sh idle LOG     # cuda_upload; gen; one 4-partition job through a daemon
#                                        # left running: its DEVICE_IDLE_RELEASE (bytes, kept)
#                                        # after IDLE_MS (default 2000) and nvidia-smi's memory
#                                        # before and after it
#   scripts/device-scale.sh final LOG    # GPU tests, gen, J=1 and J=2 (3 proofs each; LEVELS=2
#                                        # for J=2 only) as configured; FINAL_TESTS="a b" runs
#                                        # those tests instead of cuda_ntt, cuda_upload, cuda_abc
set -uo pipefail
phase=${1:?phase: check | small LOG | idle LOG | ahead LOG | probe LOG | stages LOG | stagecount LOG | product LOG | gen LOG | prove LOG | levels LOG | pinned LOG | cores LOG | count LOG | all LOG | again LOG | abc LOG | final LOG}
log=${2:-27}
OUT=${OUT:-./device-logs}
mkdir -p "$OUT"
export CUZK_REQUIRE_GPU=1
W=/root/cuzk-work
B=$W/bin
P=$W/params
mkdir -p "$P"
if [[ ! -x $B/cuzk-daemon || .device/bins.tar.xz -nt $B/cuzk-daemon ]]; then
    tar xJf .device/bins.tar.xz -C "$W"
fi
status=0
step() {
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    # Through bash so that a step may be a function of this script (exported below).
    timeout "$limit" bash -c '"$@"' _ "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    printf '%-24s rc=%d %4ds\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$OUT/summary.txt"
    [[ $rc == 0 ]] || status=1
}
# Peak host RSS and the machine's memory beside each run.
sample_memory() {
    while sleep 2; do
        printf '%s %s\n' "$(date +%s)" "$(free -b | awk '/Mem:/ {print $3, $6}')"
        nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits
    done >"$OUT/memory-$1.txt" 2>&1 &
    echo $!
}
bench() { # name J count [flags]
    local name=$1 j=$2 c=$3
    shift 3
    "$B/cuzk-client" bench --spawn -c "$c" -j "$j" "$@" --kind synthetic --shape porep \
        --log-size "$log" --partitions 10 --param-dir "$P" --log "$OUT/daemon-$name.log" \
        --daemon-arg=--backend=cuda --daemon-arg=--param-dir="$P" --daemon-arg=--synthesis-workers=2
}

# "binary" or "binary:VAR=value" -> bin, var (empty without one) and name, a log name
# (binary-VAR-value).
split_entry() {
    bin=${1%%:*} var=
    [[ $1 == *:* ]] && var=${1#*:}
    name=$bin${var:+-${var//[=_+]/-}}
}

# The 2^LOG set, generated (or found) in the parameter directory.
gen_set() {
    step "gen-2p$log" 120 "$B/cuzk-client" params synthetic --shape porep --log-size "$log" --dir "$P"
    tail -4 "$OUT/gen-2p$log.log"
}
# final's bench: J in ${LEVELS:-1,2}, 3 proofs each, memory sampled; NAME names the logs.
levels_bench() {
    local name=$1
    local m
    m=$(sample_memory "$name-$log")
    step "bench-2p$log-$name" 300 bench "$name-$log" "${LEVELS:-1,2}" 3 --warmup 0
    kill "$m"
    grep -h -B1 -A4 "^J " "$OUT/bench-2p$log-$name.log"
    grep -h -E "SRS_LOAD_END|NTT_END|MSM_END|GPU_END" "$OUT/daemon-$name-$log.log" | tail -8
}

# J=2 x 2 proofs with each daemon entry ("binary", "binary:VAR=value" or several
# VAR=value joined by +), in turn.
ab_daemons() {
    local entry v
    for entry in "$@"; do
        split_entry "$entry"
        [[ -x $B/$bin ]] || { echo "no $B/$bin"; status=1; continue; }
        for v in ${var//+/ }; do export "${v?}"; done
        CUZK_DAEMON=$B/$bin step "bench-2p$log-$name" 200 bench "$name-$log" 2 2 --warmup 0
        for v in ${var//+/ }; do unset "${v%%=*}"; done
        echo "== $name"
        bash scripts/step-p50.sh "$OUT/daemon-$name-$log.log" | grep -E "GPU_END.ms|MSM_END|NTT"
    done
}

export -f bench
export B P OUT log
BETWEEN=${BETWEEN:-true,false}

case $phase in
check)
    nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
        --format=csv | tee "$OUT/nvidia-smi.txt"
    for t in cuda_fixed_base cuda_paramgen cuda_msm_bits cuda_msm cuda_master; do
        [[ -x $B/$t ]] && step "$t" 240 env CUZK_MSM_TEST_MAX_LOG=20 "$B/$t" --test-threads=1
    done
    step gpu_fixed_base 120 "$B/gpu_fixed_base"
    grep -h -E "^test |test result|panicked" "$OUT"/cuda_*.log | tail -30
    ;;
small)
    step "gen-2p$log" 300 "$B/cuzk-client" params synthetic --shape porep --log-size "$log" --dir "$P"
    m=$(sample_memory "small-$log")
    step "bench-2p$log-j1" 240 bench "j1-$log" 1 2 --warmup 1
    step "bench-2p$log-j2" 240 bench "j2-$log" 2 4 --warmup 1
    kill "$m"
    cat "$OUT/gen-2p$log.log" | tail -12
    grep -h -A3 "^J " "$OUT/bench-2p$log-j1.log" "$OUT/bench-2p$log-j2.log"
    ;;
gen)
    df -h "$W" | tail -1
    m=$(sample_memory "gen-$log")
    step "gen-2p$log" 560 "$B/cuzk-client" params synthetic --shape porep --log-size "$log" --dir "$P"
    kill "$m"
    ls -la "$P"
    tail -15 "$OUT/gen-2p$log.log"
    ;;
all)
    df -h "$W" | tail -1
    [[ -x $B/cuda_paramgen ]] && step cuda_paramgen 90 "$B/cuda_paramgen" --test-threads=1
    m=$(sample_memory "all-$log")
    step "gen-2p$log" 330 "$B/cuzk-client" params synthetic --shape porep --log-size "$log" --dir "$P"
    tail -12 "$OUT/gen-2p$log.log"
    ls -la "$P"
    step "bench-2p$log" 300 bench "bench-$log" 1,2 2 --warmup 0
    kill "$m"
    grep -h -B2 -A4 "^J " "$OUT/bench-2p$log.log"
    grep -h -E "SRS_LOAD|NTT_END|MSM_END|SYNTH_END" "$OUT/daemon-bench-$log.log" | head -30
    ;;
again)
    cat /sys/kernel/mm/transparent_hugepage/enabled | tee "$OUT/thp.txt"
    step cuda_msm_bits 70 env CUZK_MSM_TEST_MAX_LOG=16 "$B/cuda_msm_bits" --test-threads=4
    # A split that fails its tests must not be measured: prove without it then.
    grep -q "test result: ok" "$OUT/cuda_msm_bits.log" || export CUZK_MSM_BITS=0
    echo "CUZK_MSM_BITS=${CUZK_MSM_BITS:-auto}" | tee -a "$OUT/summary.txt"
    step "gen-2p$log" 90 "$B/cuzk-client" params synthetic --shape porep --log-size "$log" --dir "$P"
    tail -10 "$OUT/gen-2p$log.log"
    step "bench-2p$log" 160 bench "again-$log" 2 2 --warmup 0
    tail -6 "$OUT/bench-2p$log.log"
    grep -h -E "SRS_LOAD_END|MSM_END|NTT_END|GPU_END|SYNTH_END" "$OUT/daemon-again-$log.log" | tail -24
    ;;
abc)
    [[ -x $B/cuda_abc ]] && step cuda_abc 90 "$B/cuda_abc" --nocapture --test-threads=1
    grep -h -E "^test |test result" "$OUT/cuda_abc.log"
    gen_set
    m=$(sample_memory "abc-device-$log")
    step "bench-2p$log-device" 200 bench "abc-device-$log" 2 3 --warmup 0 --daemon-arg=--abc-on-device
    kill "$m"
    m=$(sample_memory "abc-host-$log")
    step "bench-2p$log-host" 200 bench "abc-host-$log" 2 3 --warmup 0 --daemon-arg=--abc-on-device=false
    kill "$m"
    grep -h -A3 "^J " "$OUT/bench-2p$log-device.log" "$OUT/bench-2p$log-host.log"
    for r in device host; do
        echo "== $r"
        grep -h -E "NTT_END|MSM_END|GPU_END" "$OUT/daemon-abc-$r-$log.log" | tail -9
    done
    ;;
final)
    # The H polynomial against the CPU's (sizes the CPU reference finishes in a minute).
    [[ -x $B/cuda_ntt && -z ${FINAL_TESTS:-} ]] && step cuda_ntt 100 env CUZK_CUDA_TEST_LOGS=1-21 "$B/cuda_ntt" --test-threads=1
    for t in ${FINAL_TESTS:-cuda_upload cuda_abc}; do
        [[ -x $B/$t ]] && step "$t" 100 "$B/$t" --test-threads=1
    done
    grep -h -E "^test |test result" "$OUT"/cuda_*.log
    gen_set
    levels_bench final
    ;;
ahead)
    # NOTES part 13. Expected to fail: the upload-order test built before the fix.
    if [[ -x .device/cuda_upload_prefix ]]; then
        timeout 60 .device/cuda_upload_prefix --exact \
            an_upload_waits_for_the_kernels_queued_before_its_allocation >"$OUT/prefix.log" 2>&1
        echo "cuda_upload before the fix: rc=$? (expected 101)" | tee -a "$OUT/summary.txt"
        grep -h -E "overwritten|test result" "$OUT/prefix.log" | head -3
    fi
    for t in cuda_upload cuda_msm cuda_msm_bits cuda_abc; do
        [[ -x $B/$t ]] && step "$t" 120 "$B/$t" --test-threads=2
    done
    for i in 1 2 3; do
        step "cuda_master-t2-$i" 60 "$B/cuda_master" --test-threads=2
    done
    grep -h -E "^test result|panicked|FAILED" "$OUT"/cuda_*.log
    gen_set
    # Entries separated by spaces (a value may hold a comma: CUZK_MSM_AHEAD_AT=0,3).
    # By default the next A/B (NOTES part 13): the sort ahead, alone and with the pool
    # keeping H's transient memory across steps (its threshold counts the resident bases).
    ab_daemons ${DAEMONS:-cuzk-daemon cuzk-daemon:CUZK_MSM_AHEAD=1 \
        cuzk-daemon:CUZK_MSM_AHEAD=1+CUZK_POOL_KEEP_GIB=120}
    [[ ${FINAL:-1} == 1 ]] && levels_bench final
    ;;
count)
    # The MSM tests with every device-scalar count split into one pass per bucket set
    # (CUZK_MSM_COUNT_BYTES=1), cuda_master as configured; then gen and final's bench.
    for t in cuda_msm cuda_msm_bits; do
        [[ -x $B/$t ]] && step "$t" 150 env CUZK_MSM_COUNT_BYTES=1 CUZK_MSM_TEST_MAX_LOG=16 \
            "$B/$t" --test-threads=4
    done
    [[ -x $B/cuda_master ]] && step cuda_master 120 "$B/cuda_master" --test-threads=4
    grep -h -E "^test |test result|panicked" "$OUT"/cuda_*.log | tail -30
    gen_set
    levels_bench count
    ;;
pinned)
    gen_set
    levels_bench pinned
    CUZK_PIN_AUX=0 levels_bench heap
    ;;
cores)
    # pinned's two benches with synthesis on THREADS (default 14) rayon threads, leaving
    # the device worker cores of its own
    gen_set
    RAYON_NUM_THREADS=${THREADS:-14} levels_bench "pinned${THREADS:-14}"
    RAYON_NUM_THREADS=${THREADS:-14} CUZK_PIN_AUX=0 levels_bench "heap${THREADS:-14}"
    ;;
stages)
    # The MSM tests (count passes forced per set too: the stages split them), cuda_master
    # and cuda_abc; then gen, and final's bench with the sort in stages beside the
    # accumulation (the default) and in series (CUZK_MSM_STAGES=1), in one call.
    for t in cuda_msm cuda_msm_bits; do
        [[ -x $B/$t ]] && step "$t" 150 env CUZK_MSM_TEST_MAX_LOG=16 "$B/$t" --test-threads=4
    done
    [[ -x $B/cuda_msm ]] && step cuda_msm-count1 150 env CUZK_MSM_COUNT_BYTES=1 \
        CUZK_MSM_TEST_MAX_LOG=16 "$B/cuda_msm" --test-threads=4
    for t in cuda_master cuda_abc; do
        [[ -x $B/$t ]] && step "$t" 120 "$B/$t" --test-threads=4
    done
    grep -h -E "^test |test result|panicked" "$OUT"/cuda_*.log | tail -40
    gen_set
    levels_bench staged
    CUZK_MSM_STAGES=1 levels_bench serial
    ;;
profile)
    # gen, then final's bench with CUZK_MSM_PROFILE=1 (phases synchronised, ~5% slower) in
    # stages and in series; the H MSMs' phase medians from both daemon logs.
    gen_set
    CUZK_MSM_PROFILE=1 levels_bench prof-staged
    CUZK_MSM_PROFILE=1 CUZK_MSM_STAGES=1 levels_bench prof-serial
    for r in staged serial; do
        echo "== $r: H MSM phases (ms), median over the run"
        grep -h "MSM_PROFILE G1 n=134217727" "$OUT/daemon-prof-$r-$log.log" | tr ' ' '\n' |
            awk -F= 'NF == 2 && $2 ~ /^[0-9.]+$/ { v[$1] = v[$1] " " $2 }
                END { for (k in v) print k, v[k] }' | while read -r k vals; do
            printf '%s\n' $vals | sort -n | awk -v k="$k" '{ a[NR] = $1 }
                END { printf "  %-14s %8.1f  (%d)\n", k, a[int((NR + 1) / 2)], NR }'
        done
    done
    ;;
stagecount)
    # gen, then J=2 x 2 proofs once per H MSM stage count in COUNTS (default 3,2,4,6): the
    # step's time against the pause points' spacing (kernels/NOTES.md, part 9).
    gen_set
    counts=${COUNTS:-3,2,4,6}
    for s in ${counts//,/ }; do
        CUZK_MSM_STAGES=$s step "bench-2p$log-stages$s" 200 bench "stages$s-$log" 2 2 --warmup 0
        bash scripts/step-p50.sh "$OUT/daemon-stages$s-$log.log" | grep -E "GPU_END.ms|MSM_END.h "
    done
    ;;
product)
    # The Fp product variants in the standalone bucket-pass harness (bit-checked against
    # CIOS), then the 2^LOG step with each daemon build in DAEMONS, in one call.
    if [[ ${HARNESS:-0} == 1 ]]; then
        step msm-harness 300 env OUT="$(cd "$OUT" && pwd)/harness" LOGS="${HARNESS_LOGS:-22,24}" \
            REPS="${REPS:-5}" G2_LOGS="${HARNESS_G2_LOGS:-20}" bash kernels/bench/run_msm_harness.sh
        grep -E "^\| G" "$OUT/msm-harness.log" | tail -16
    fi
    # The crate's GPU tests of the default build first (TESTS, those bundled).
    # An entry test:VAR=value runs it with that variable too (its log test-VAR-value).
    for entry in ${TESTS:-}; do
        split_entry "$entry"
        [[ -x $B/$bin ]] && step "$name" 120 env ${var:+"$var"} "$B/$bin" --test-threads=1
    done
    [[ -n ${TESTS:-} ]] && grep -h -E "^test result|panicked|FAILED" "$OUT"/cuda_*.log
    gen_set
    # An entry is a daemon binary, optionally with one VAR=value for its environment
    # (cuzk-daemon:CUZK_MSM_REDUCE_WIDE=0).
    daemons=${DAEMONS:-cuzk-daemon,cuzk-daemon-alt}
    ab_daemons ${daemons//,/ }
    ;;
levels)
    # final's bench alone, on the set final generated (NAME names the logs).
    levels_bench "${NAME:-levels}"
    ;;
probe)
    # Urgent latency at production scale: real 2 KiB WinningPoSt (parameters generated
    # here, sector and vanilla proof carried in .device/vec from `gen-vanilla winning`)
    # timed alone, then beside ${LOAD:-2} PoRep-shaped 2^LOG x 10 jobs in flight; once per
    # value in BETWEEN (default: true,false) of the daemon's --urgent-between-phases.
    [[ -x $B/cuda_master ]] && step cuda_master 90 "$B/cuda_master" --test-threads=2
    [[ -x $B/cuda_msm ]] && step cuda_msm 240 "$B/cuda_msm" --test-threads=2
    gen_set
    step winning-params 240 "$B/cuzk-client" params generate --sector-size 2KiB --kinds winning --dir "$P"
    for between in ${BETWEEN//,/ }; do
        m=$(sample_memory "probe-$between-$log")
        step "probe-$between-2p$log" 300 "$B/cuzk-client" bench --spawn --load "synthetic:${LOAD:-2}" \
            --shape porep --log-size "$log" --partitions 10 --probe "winning:${PROBES:-20}" \
            --probe-manifest .device/vec/winning.json --probe-gap-ms "${GAP:-0}" \
            --warmup 1 --param-dir "$P" \
            --log "$OUT/daemon-probe-$between-$log.log" --daemon-arg=--backend=cuda \
            --daemon-arg=--param-dir="$P" --daemon-arg=--synthesis-workers=2 \
            --daemon-arg=--urgent-between-phases="$between"
        kill "$m"
        echo "== urgent_between_phases=$between"
        tail -9 "$OUT/probe-$between-2p$log.log"
        bash scripts/step-p50.sh "$OUT/daemon-probe-$between-$log.log" | grep -E "GPU_END|MSM_END.h "
    done
    ;;
idle)
    # The pool's trim when a daemon goes idle after a job (README "Device memory between
    # steps"): the release must hand back the step's transient memory, not only what its
    # last synchronisation had seen freed (kernels/NOTES.md, part 16).
    [[ -x $B/cuda_upload ]] && step cuda_upload 120 "$B/cuda_upload" --test-threads=1
    gen_set
    used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; }
    "$B/cuzk-daemon" --backend=cuda --param-dir="$P" --synthesis-workers=2 \
        --listen=127.0.0.1:9821 --idle-release-ms="${IDLE_MS:-2000}" >"$OUT/daemon-idle-$log.log" 2>&1 &
    d=$!
    for _ in $(seq 60); do grep -q "listening on" "$OUT/daemon-idle-$log.log" && break; sleep 1; done
    step prove-idle 300 "$B/cuzk-client" --addr 127.0.0.1:9821 prove --kind synthetic \
        --shape porep --log-size "$log" --partitions 4
    echo "after the job: $(used) MiB used" | tee -a "$OUT/summary.txt"
    sleep $(((${IDLE_MS:-2000} + 3000) / 1000))
    echo "idle: $(used) MiB used" | tee -a "$OUT/summary.txt"
    kill "$d"; wait "$d"
    grep -h -E "DEVICE_IDLE_RELEASE|GPU_END" "$OUT/daemon-idle-$log.log" | tail -6
    grep -q DEVICE_IDLE_RELEASE "$OUT/daemon-idle-$log.log" || { echo "no DEVICE_IDLE_RELEASE"; status=1; }
    ;;
prove)
    m=$(sample_memory "prove-$log")
    step "bench-2p$log-j1" 330 bench "j1-$log" 1 2 --warmup 1
    step "bench-2p$log-j2" 250 bench "j2-$log" 2 2 --warmup 1
    kill "$m"
    grep -h -A3 "^J " "$OUT/bench-2p$log-j1.log" "$OUT/bench-2p$log-j2.log"
    grep -h -E "MSM_END|NTT_END|SRS_LOAD" "$OUT/daemon-j1-$log.log" | head -12
    ;;
esac
grep -h -E "SKIP|panicked|FAILED" "$OUT"/*.log | head -10
cat "$OUT/summary.txt"
exit $status
