#!/usr/bin/env bash
# On the GPU machine (device tool): the real 32 GiB PoRep, end to end. Binaries come prebuilt
# in .device/bins.tar.xz (scripts/device-bundle.sh -- cuzk-daemon cuzk-client); logs go to
# $OUT, a short table is printed last. The machine keeps nothing between leases: `all` makes
# the virtual sectors, generates the real circuit's parameters (44 GiB) and proves, in one
# call; `prove` only proves, for a second call on the same warm machine.
#
#   scripts/device-32g.sh all     # sectors + PoRep and WinningPoSt parameters, the witness
#                                 # (stock vs native), PoRep C2 at J=1 and J=2
#   scripts/device-32g.sh final   # sets, the witness, PoRep at J=2 with WinningPoSt probes
#   scripts/device-32g.sh j2      # PoRep C2 at J=2 (after `all`, on the same warm machine)
#   scripts/device-32g.sh j3      # PoRep C2 at J=3
#   scripts/device-32g.sh winning # PoRep sector and parameters (if missing), WinningPoSt's;
#                                 # WinningPoSt alone and under a PoRep load of 2 in flight
#   scripts/device-32g.sh window  # the PoRep set removed (disk), WindowPoSt: a full
#                                 # partition of 2,349 virtual sectors, parameters, one proof
set -uo pipefail
phase=${1:?phase: all | final | j2 | j3 | winning | window}
OUT=${OUT:-./device-logs}
mkdir -p "$OUT"
W=/root/cuzk-work
B=$W/bin
P=$W/params
mkdir -p "$P" "$B"
export FIL_PROOFS_PARAMETER_CACHE=$P CUZK_PARAM_CACHE=$P
# The matrices params generate recorded: the daemon reads them instead of recording again.
export CUZK_MATRIX_DIR=$P
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
    return $rc
}

# Peak host RSS of the daemon and the card's memory in use, once a second.
sample() {
    local rss=0 vram=0 r v
    while sleep 1; do
        r=$(ps -C cuzk-daemon -o rss= 2>/dev/null | sort -n | tail -1)
        v=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
        [[ -n $r && $r -gt $rss ]] && rss=$r
        [[ -n $v && $v -gt $vram ]] && vram=$v
        echo "daemon peak RSS $((rss / 1024 / 1024)) GiB, peak VRAM $((vram / 1024)) GiB" >"$OUT/peak-mem.txt"
    done
}

bench() {
    local name=$1 limit=$2; shift 2
    step "$name" "$limit" "$B/cuzk-client" bench --spawn --kind porep \
        --manifest "$W/vec32/porep.json" --log "$OUT/$name-daemon.log" \
        --daemon-arg=--backend=cuda --daemon-arg=--param-dir="$P" "$@"
    grep -h -A3 "^J " "$OUT/$name.log"
}

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/card.txt"
nproc | tee -a "$OUT/card.txt"
sample &
sampler=$!
case $phase in
all)
    step gen_vanilla 120 "$B/cuzk-client" gen-vanilla porep --sector-size 32GiB --out "$W/vec32" ||
        { cat "$OUT/gen_vanilla.log"; exit 1; }
    step params 420 /usr/bin/time -v "$B/cuzk-client" params generate --sector-size 32GiB \
        --kinds porep,winning --dir "$P" || { tail -30 "$OUT/params.log"; exit 1; }
    grep -h -E "recorded|generated|Maximum resident|Elapsed" "$OUT/params.log"
    ls -la "$P" | tee "$OUT/params-dir.txt"
    df -h "$P" | tail -1
    # The witness alone: the stock circuit's gadgets against the native generator.
    step witness 120 "$B/witness_compare" --sector-size 32GiB --partitions 2 --runs 2
    cat "$OUT/witness.log"
    bench porep_j1 180 -c 1 -j 1 --warmup 0
    bench porep_j2 200 -c 4 -j 2 --warmup 0
    ;;
final)
    # One call on a fresh machine: sets, the witness paths, then PoRep at J=2 continuously
    # with WinningPoSt probes arriving during it (proofs/h and probe latency from TIMELINE).
    step gen_vanilla 120 "$B/cuzk-client" gen-vanilla porep --sector-size 32GiB --out "$W/vec32" ||
        { cat "$OUT/gen_vanilla.log"; exit 1; }
    step gen_winning 60 "$B/cuzk-client" gen-vanilla winning --sector-size 32GiB --out "$W/vec32"
    step params 420 /usr/bin/time -v "$B/cuzk-client" params generate --sector-size 32GiB \
        --kinds porep,winning --dir "$P" || { tail -30 "$OUT/params.log"; exit 1; }
    grep -h -E "generated|Maximum resident|Elapsed" "$OUT/params.log"
    step witness 120 "$B/witness_compare" --sector-size 32GiB --partitions 1 --runs 2
    cat "$OUT/witness.log"
    step probe 300 "$B/cuzk-client" bench --spawn --load porep:2 --probe winning:12 \
        --probe-gap-ms 10000 --manifest-dir "$W/vec32" --log "$OUT/probe-daemon.log" \
        --daemon-arg=--backend=cuda --daemon-arg=--param-dir="$P"
    tail -14 "$OUT/probe.log"
    ;;
j2)
    bench porep_j2 560 -c 3 -j 2 --warmup 0
    ;;
j3)
    bench porep_j3 300 -c 6 -j 3 --warmup 0
    ;;
winning)
    [[ -s $W/vec32/porep.json ]] || step gen_vanilla 120 "$B/cuzk-client" gen-vanilla porep \
        --sector-size 32GiB --out "$W/vec32"
    step gen_winning 60 "$B/cuzk-client" gen-vanilla winning --sector-size 32GiB --out "$W/vec32"
    ls "$P"/*winning* >/dev/null 2>&1 || step params 420 /usr/bin/time -v "$B/cuzk-client" \
        params generate --sector-size 32GiB --kinds porep,winning --dir "$P" ||
        { tail -30 "$OUT/params.log"; exit 1; }
    step probe 330 "$B/cuzk-client" bench --spawn --load porep:2 --probe winning:8 \
        --probe-gap-ms 10000 --manifest-dir "$W/vec32" --log "$OUT/probe-daemon.log" \
        --daemon-arg=--backend=cuda --daemon-arg=--param-dir="$P"
    tail -12 "$OUT/probe.log"
    ;;
window)
    rm -f "$P"/*stacked-proof-of-replication* "$P"/cuzk-matrices-*stacked*
    step gen_window 300 "$B/cuzk-client" gen-vanilla window --sector-size 32GiB --out "$W/vec32w"
    step params_window 360 /usr/bin/time -v "$B/cuzk-client" params generate \
        --sector-size 32GiB --kinds window --dir "$P" || { tail -30 "$OUT/params_window.log"; exit 1; }
    grep -h -E "recorded|generated|Maximum resident|Elapsed" "$OUT/params_window.log"
    step window_j1 200 "$B/cuzk-client" bench --spawn --kind window -c 1 -j 1 --warmup 0 \
        --manifest "$W/vec32w/window.json" --log "$OUT/window-daemon.log" \
        --daemon-arg=--backend=cuda --daemon-arg=--param-dir="$P"
    grep -h -A3 "^J " "$OUT/window_j1.log"
    ;;
esac
kill "$sampler" 2>/dev/null
cat "$OUT/peak-mem.txt" 2>/dev/null
cat "$OUT/summary.txt"
exit $status
