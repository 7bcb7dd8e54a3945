#!/usr/bin/env bash
# Renders a daemon log's waterfall to HTML and checks it in a real headless browser (Debian's
# chromium): the page loads without console errors or failed loads, the DOM holds the chart,
# the SVG is well-formed XML, and a screenshot is non-empty, not one flat colour, and shows
# every phase colour of the legend.
#
# usage: scripts/check-waterfall.sh [LOG] [OUT_DIR]
#   LOG      daemon log with TIMELINE lines (default: the test fixture)
#   OUT_DIR  where waterfall.html and waterfall.png go (default: a fresh temporary folder)
# env: CUZK_CLIENT=path  use this cuzk-client binary instead of `cargo run -p cuzk-client`
#      WINDOW=W,H        browser window for the screenshot (default 1600,1000)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
log=${1:-$root/cuzk-client/tests/fixtures/timeline.log}
out_dir=${2:-$(mktemp -d)}
window=${WINDOW:-1600,1000}
mkdir -p "$out_dir"
log=$(cd "$(dirname "$log")" && pwd)/$(basename "$log")
out_dir=$(cd "$out_dir" && pwd)
html=$out_dir/waterfall.html
png=$out_dir/waterfall.png

fail() {
	echo "check-waterfall: FAIL: $*" >&2
	exit 1
}

echo "== render $log"
if [[ -n ${CUZK_CLIENT:-} ]]; then
	"$CUZK_CLIENT" waterfall "$log" --out "$html"
else
	(cd "$root" && cargo run -q -p cuzk-client -- waterfall "$log" --out "$html")
fi
[[ -s $html ]] || fail "no HTML written to $html"

if ! command -v chromium >/dev/null 2>&1; then
	echo "== installing chromium"
	export DEBIAN_FRONTEND=noninteractive
	# CI runs as root; elsewhere sudo, when there is one.
	sudo=()
	if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null 2>&1; then
		sudo=(sudo --preserve-env=DEBIAN_FRONTEND)
	fi
	"${sudo[@]}" apt-get update -q >/dev/null
	"${sudo[@]}" apt-get install -y -q chromium >/dev/null
	command -v chromium >/dev/null 2>&1 || fail "chromium is not on PATH after installing it"
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# Everything that would reach the network or pop up first-run UI is off: the check must give
# the same answer offline, in CI, every time.
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
	--disable-background-networking --disable-component-update --disable-sync
	--user-data-dir="$profile")

echo "== DOM"
chromium "${flags[@]}" --dump-dom "file://$html" >"$out_dir/dom.html" 2>"$out_dir/dom.log" ||
	fail "chromium --dump-dom failed (see $out_dir/dom.log)"
grep -q '<svg' "$out_dir/dom.html" || fail "the loaded DOM has no <svg>"
rects=$(grep -o '<rect' "$out_dir/dom.html" | wc -l)
[[ $rects -gt 10 ]] || fail "the loaded DOM has only $rects <rect> elements"
echo "DOM has the chart ($rects rects)"

echo "== screenshot"
chromium "${flags[@]}" --enable-logging=stderr --v=0 --hide-scrollbars \
	--window-size="$window" --screenshot="$png" "file://$html" \
	>"$out_dir/screenshot.log" 2>&1 || fail "chromium --screenshot failed (see $out_dir/screenshot.log)"
# Console errors (a script error, a resource the page asked for and did not get) are logged
# as CONSOLE lines or net errors; the page is meant to have neither.
if grep -E 'CONSOLE.*(Uncaught|Error|error)|Failed to load resource|ERR_FILE_NOT_FOUND' \
	"$out_dir/screenshot.log"; then
	fail "the browser reported errors loading the page"
fi

python3 - "$html" "$png" <<'EOF'
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

html_path, png_path = sys.argv[1], sys.argv[2]

# Each inline SVG must be well-formed XML so that it also stands alone as an .svg file;
# a browser would forgive a broken tag, a test should not.
html = open(html_path, encoding="utf-8").read()
svgs = re.findall(r"<svg.*?</svg>", html, re.S)
if not svgs:
    sys.exit("no <svg> in the HTML")
for svg in svgs:
    try:
        ET.fromstring(svg)
    except ET.ParseError as e:
        sys.exit(f"an SVG is not well-formed: {e}")


def read_png(path):
    """Decodes an 8-bit RGB/RGBA non-interlaced PNG (what chromium writes) to rows of bytes."""
    data = open(path, "rb").read()
    if len(data) < 8 or data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path} is not a PNG ({len(data)} bytes)")
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if depth != 8 or colour not in (2, 6) or interlace:
        sys.exit(f"unexpected PNG format depth={depth} colour={colour} interlace={interlace}")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


width, height, bpp, rows = read_png(png_path)
colours = {}
for row in rows:
    for x in range(0, len(row), bpp):
        px = row[x : x + 3]
        colours[px] = colours.get(px, 0) + 1
if len(colours) < 2:
    sys.exit(f"the screenshot is a single colour ({width}x{height})")

# Every phase colour of the legend must be on screen: the bars were drawn, in their colours.
phase_colours = re.findall(r'fill="(#[0-9a-f]{6})"/><text[^>]*class="label">', html)
missing = []
for hex_colour in phase_colours:
    rgb = bytes.fromhex(hex_colour[1:])
    if colours.get(rgb, 0) < 20:
        missing.append(hex_colour)
if len(phase_colours) < 5 or missing:
    sys.exit(f"phase colours {phase_colours}: missing from the screenshot: {missing}")
print(f"screenshot {width}x{height}: {len(colours)} colours, all {len(phase_colours)} phase colours present")
EOF

echo "check-waterfall: OK: $html, $png"
