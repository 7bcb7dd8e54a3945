#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<target>/ from real small payloads.

Inputs: a directory written by `cuzk-client gen-vanilla <kind> --sector-size 2KiB --out DIR`
for porep, winning, window and snap (manifests K.json plus payload files), and a daemon log
with TIMELINE lines. Seeds are the valid payloads plus a few near misses, so the fuzzer
starts inside each parser's interesting paths. Run once; the output is committed.

    python3 fuzz/make-seeds.py VECTOR_DIR docs/sweep-synthetic-16.log
"""
import base64
import json
import os
import sys

vec_dir, timeline_log = sys.argv[1], sys.argv[2]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- protobuf encoding of SubmitProofRequest (proto/cuzk/v1/proving.proto) ---
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v) if v else b""


def field_bytes(num, b):
    return varint(num << 3 | 2) + varint(len(b)) + b if b else b""


KIND = {"porep": 1, "snap": 2, "window": 3, "winning": 4, "synthetic": 100}


def submit(kname, m=None, payload=None, payloads=(), **over):
    m = m or {}
    f = dict(
        request_id=over.get("request_id", b""),
        kind=over.get("kind", KIND[kname]),
        sector_size=m.get("sector_size", 0),
        registered_proof=m.get("registered_proof", 0),
        priority=over.get("priority", 0),
    )
    out = field_bytes(1, f["request_id"])
    out += field_varint(2, f["kind"]) + field_varint(3, f["sector_size"])
    out += field_varint(4, f["registered_proof"]) + field_varint(5, f["priority"])
    out += field_bytes(10, payload or b"")
    for p in payloads:
        out += varint(11 << 3 | 2) + varint(len(p)) + p
    sectors = m.get("sectors", [])
    out += field_varint(20, sectors[0]["sector_number"] if kname == "porep" else 0)
    out += field_varint(21, m.get("miner_id", 0))
    out += field_bytes(22, bytes.fromhex(m.get("randomness", "")))
    out += field_varint(23, m.get("partition_index", 0))
    for num, key in ((30, "comm_r_old"), (31, "comm_r_new"), (32, "comm_d_new")):
        out += field_bytes(num, bytes.fromhex(m.get(key, "")))
    out += field_varint(100, over.get("log", 0)) + field_varint(101, over.get("parts", 0))
    out += field_varint(102, over.get("seed", 0))
    return out


def manifest(kind):
    with open(os.path.join(vec_dir, kind + ".json")) as f:
        m = json.load(f)
    payloads = [open(os.path.join(vec_dir, p), "rb").read() for p in m.get("vanilla_proofs", [])]
    payload = open(os.path.join(vec_dir, m["vanilla_proof"]), "rb").read() if m.get("vanilla_proof") else None
    return m, payload, payloads


# (a) submit_request
write("submit_request", "valid-synthetic-2^10", submit("synthetic", log=10, parts=2, seed=7))
write("submit_request", "synthetic-bad-priority", submit("synthetic", log=10, parts=1, priority=9))
write("submit_request", "unknown-kind", submit("synthetic", kind=77, log=10))
for kind in ("porep", "winning", "window", "snap"):
    m, payload, payloads = manifest(kind)
    write("submit_request", "valid-" + kind + "-2KiB", submit(kind, m, payload, payloads))

# (b) porep_envelope
m, env, _ = manifest("porep")
write("porep_envelope", "valid-envelope-2KiB", env)
e = json.loads(env)
c1 = base64.b64decode(e["Phase1Out"])
write("porep_envelope", "raw-c1-not-envelope", c1[:4096])
write("porep_envelope", "bad-base64", json.dumps({"SectorNum": 1, "Phase1Out": "!!", "SectorSize": 2048}))
write("porep_envelope", "wrong-size", json.dumps(dict(e, SectorSize=34359738368)))
write("porep_envelope", "negative-sector", json.dumps(dict(e, SectorNum=-1)))
write("porep_envelope", "truncated-c1",
      json.dumps(dict(e, Phase1Out=base64.b64encode(c1[: len(c1) // 2]).decode())))

# (c) vanilla_* : first byte selects the sector size (and, window, the entry count)
_, _, win = manifest("winning")
write("vanilla_winning", "valid-2KiB", b"\x00" + win[0])
write("vanilla_winning", "2KiB-truncated", b"\x00" + win[0][:1000])
write("vanilla_winning", "as-32GiB", b"\x01" + win[0][:4096])
_, _, wnd = manifest("window")
write("vanilla_window", "valid-2KiB-two-sectors", b"\x03" + wnd[0] + wnd[1])
write("vanilla_window", "valid-2KiB-one-sector", b"\x00" + wnd[0])
write("vanilla_window", "2KiB-swapped", b"\x03" + wnd[1] + wnd[0])
_, _, snp = manifest("snap")
write("vanilla_snap", "valid-2KiB", b"\x00" + snp[0])
write("vanilla_snap", "as-64GiB", b"\x02" + snp[0][:4096])

# (d) daemon_config
write("daemon_config", "valid-empty", "")
write("daemon_config", "valid-readme", """listen = "127.0.0.1:9820"
# unix_socket = "/run/cuzk.sock"
shutdown_grace_secs = 30

[engine]
param_dir = "/var/tmp/filecoin-proof-parameters"
backend = "auto"
devices = []
synthesis_workers = 1
max_queued_jobs = 256
max_synthesized_partitions = 2
verify_proofs = true
result_retention_secs = 3600
timeline = true
""")
write("daemon_config", "unknown-field", "[engine]\nnope = 1\n")
write("daemon_config", "wrong-types", "listen = 5\n[engine]\nbackend = \"gpu\"\ndevices = [-1]\n")
write("daemon_config", "valid-unix", "unix_socket = \"/tmp/x.sock\"\nshutdown_grace_secs = 9223372036854775807\n")

# (e) timeline
lines = [l for l in open(timeline_log, errors="replace") if l.startswith("TIMELINE,")]
write("timeline", "valid-sweep-head", "".join(lines[:120]))
write("timeline", "malformed", "TIMELINE,abc,JOB_QUEUED,j,kind=x\nTIMELINE,1.0\nTIMELINE,2.0,GPU_START,j,partition=;device=\n"
      "TIMELINE,3.0,JOB_DONE,j,ms=NaN\nTIMELINE,-1,SYNTH_END,j,partition=99999999999;ms=inf\n")
