#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a bounded time, one after another, and prints
# the executions each reached. Usage: scripts/fuzz.sh [seconds-per-target] [target...]
#
# Stable Rust only (RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its -Z flags). No sanitizer by
# default (FUZZ_SANITIZER=address to use ASan): the parsers are safe Rust, and what we look
# for is panics, aborts, overflows (debug assertions are on) and runaway allocation.
# New inputs go to a scratch corpus (target/fuzz-corpus/<target>), so the committed seeds in
# fuzz/corpus/ stay small; crashes land in fuzz/artifacts/<target>/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
secs="${1:-60}"
shift || true

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
sanitizer="${FUZZ_SANITIZER:-none}"
target_dir="${FUZZ_TARGET_DIR:-$root/target/fuzz}"
scratch="${FUZZ_SCRATCH:-$root/target/fuzz-corpus}"

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    mapfile -t targets < <(cargo fuzz list)
fi
cargo fuzz build -s "$sanitizer" --target-dir "$target_dir"
bin_dir="$target_dir/$(rustc -vV | sed -n 's/^host: //p')/release"

summary=()
status=0
for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t"
    log="$scratch/$t.log"
    echo "== $t: ${secs}s"
    # -rss_limit_mb: a parser that allocates far beyond its input is a finding too.
    # The binary itself, not `cargo fuzz run`, which would re-run cargo for every target.
    mkdir -p "fuzz/artifacts/$t"
    if "$bin_dir/$t" -artifact_prefix="fuzz/artifacts/$t/" \
        -max_total_time="$secs" -rss_limit_mb=4096 -max_len=262144 -print_final_stats=1 \
        "$scratch/$t" "fuzz/corpus/$t" >"$log" 2>&1; then
        result=ok
    else
        result="CRASH (see $log and fuzz/artifacts/$t/)"
        status=1
    fi
    execs="$(grep -a '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)"
    summary+=("$(printf '%-18s %10s execs in %ss  %s' "$t" "${execs:-?}" "$secs" "$result")")
    echo "${summary[-1]}"
done
echo
echo "target             executions"
printf '%s\n' "${summary[@]}"
exit "$status"
