#!/usr/bin/env bash
# Builds the release binaries a device run needs (kernels for sm_90 only) and packs them,
# stripped, into .device/bins.tar.xz (bin/<name>) for the device tool's `carry`.
#
#   scripts/device-bundle.sh TEST... -- BIN...
#   e.g. scripts/device-bundle.sh cuda_msm cuda_fixed_base -- cuzk-daemon cuzk-client gpu_msm
# ALT_NVCC_FLAGS="-DCUZK_FP_FAST_U=600" also packs bin/cuzk-daemon-alt, the daemon with its
# kernels built with those nvcc flags (an A/B of a kernel variant through the daemon:
# scripts/device-scale.sh product). It is built first, so target/ ends as the default build.
set -euo pipefail
cd "$(dirname "$0")/.."
tests=() bins=()
while [[ $# -gt 0 && $1 != -- ]]; do tests+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
bins=("$@")
export NVCC=${NVCC:-$PWD/.tools/cuda/nvidia/cu13/bin/nvcc} CUZK_CUDA_ARCHS=${CUZK_CUDA_ARCHS:-90}
stage=$(mktemp -d)
mkdir -p "$stage/bin"
if [[ -n ${ALT_NVCC_FLAGS:-} ]]; then
    CUZK_NVCC_FLAGS="$ALT_NVCC_FLAGS" cargo build --release -j2 -p cuzk-daemon --bin cuzk-daemon
    cp target/release/cuzk-daemon "$stage/bin/cuzk-daemon-alt"
fi
cargo build --release -j2 --workspace $(printf -- '--bin %s ' "${bins[@]}")
for b in "${bins[@]}"; do cp "target/release/$b" "$stage/bin/"; done
if [[ ${#tests[@]} -gt 0 ]]; then
    cargo test --release -j2 --workspace --no-run --message-format=json \
        $(printf -- '--test %s ' "${tests[@]}") 2>/dev/null |
        python3 -c '
import json, sys
want = set(sys.argv[1:])
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in want and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])
' "${tests[@]}" | while read -r name exe; do cp "$exe" "$stage/bin/$name"; done
fi
strip "$stage"/bin/*
mkdir -p .device
tar cJf .device/bins.tar.xz -C "$stage" bin
ls -la "$stage/bin"
du -h .device/bins.tar.xz
rm -rf "$stage"
