#!/usr/bin/env bash
# Load test: >= 200 small synthetic jobs from 16 concurrent clients (16 gRPC connections)
# against a daemon on loopback, then checks that none was lost (every submitted job was
# answered COMPLETED, and the daemon's own count agrees) and that every proof verifies.
# Prints totals, throughput and p50/p95 latency; exits non-zero on any lost or bad proof.
#
#   scripts/load.sh                          # spawns a daemon (CPU backend) on a free port
#   scripts/load.sh --addr 127.0.0.1:9820    # a running daemon (loopback only)
#   scripts/load.sh --jobs 400 --clients 32 --time-limit-secs 900
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
params="${CUZK_PARAM_CACHE:-$HOME/.cache/cuzk/params}"
mkdir -p "$params"
target="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -p cuzk-daemon -p cuzk-client -j"${CARGO_BUILD_JOBS:-2}"

spawn=(--spawn --daemon-arg=--backend=cpu "--daemon-arg=--param-dir=$params")
for a in "$@"; do
    [[ "$a" == --addr* ]] && spawn=()
done
exec "$target/release/cuzk-client" load --clients 16 --jobs 208 --log-size 10 \
    --time-limit-secs 600 --param-dir "$params" "${spawn[@]}" "$@"
