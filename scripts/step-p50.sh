#!/usr/bin/env bash
# The median of every device-step figure in daemon logs' TIMELINE (GPU_END ms; NTT_END ms,
# upload, evaluate; MSM_END ms, h, l, a, b_g1, b_g2), and the number of steps, per log.
#   scripts/step-p50.sh daemon.log [more.log ...]
set -euo pipefail
for log in "$@"; do
    grep -h -E "TIMELINE,[0-9.]+,(GPU_END|NTT_END|MSM_END)," "$log" | awk -F, '
        { ev = $3; n = split($5, kv, ";")
          for (i = 1; i <= n; i++) {
              split(kv[i], p, "=")
              if (p[2] ~ /^[0-9.]+$/ && p[1] != "partition") v[ev "." p[1]] = v[ev "." p[1]] " " p[2]
          } }
        END { for (k in v) print k, v[k] }' | sort | while read -r key vals; do
        # shellcheck disable=SC2086
        printf '%s\n' $vals | sort -n | awk -v k="$key" '{ a[NR] = $1 }
            END { printf "%-18s p50 %9.1f  min %9.1f  max %9.1f  (%d)\n", k, a[int((NR + 1) / 2)], a[1], a[NR], NR }'
    done | sed "s|^|$(basename "$log") |"
done
