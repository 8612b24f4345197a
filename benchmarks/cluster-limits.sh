#!/usr/bin/env bash
# The cluster limits of the durable queue (see README.md, "Cluster limits on PostgreSQL"): what a queue's cluster
# limits (global concurrency, per key, rate; set with a plain SQL upsert into its queue_settings row) cost when they
# do not bind, with 1, 2 and 4 consumer processes, and whether they hold when they do (4 processes x 8 workers against
# max_running 6, a rate of 200/s, 2 per key over 3 keys). It is the PostgreSQL benchmark's driver with --shapes
# cluster (postgresql.sh builds it, starts and stops the throwaway server); markdown on stdout, and the same tables
# with the raw rows as CSV under benchmarks/results/cluster-limits/ (--out DIR to change that).
#
#   benchmarks/cluster-limits.sh                 # the full run: 4 rounds of 5 cases x 4,000 items per process count,
#                                                # then the three binding runs of 10 s each (about 5-7 minutes on 2 cores)
#   benchmarks/cluster-limits.sh --quick         # 300 items, 1 round, 2 s binding runs: checks that every step runs
#   benchmarks/cluster-limits.sh --strict        # exits 1 when a limit did not hold in a binding run
#   benchmarks/cluster-limits.sh --cluster-consumers 2,4 --cluster-rounds 6 --max-running 4 --rate 100
#
# Options (the driver's): --quick, --cluster-items N, --cluster-rounds R, --cluster-consumers 1,2,4, --cluster-workers W,
# --cluster-claims-per-worker C, --cluster-keys K, --binding-consumers P, --binding-workers W, --handler-ms MS,
# --max-running N, --rate R, --burst B, --binding-keys K, --max-running-per-key M, --binding-seconds S, --binding-warmup S,
# --fsync on|off, --strict; the script's own: --out DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

out=benchmarks/results/cluster-limits
command_line="benchmarks/cluster-limits.sh $*"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out)
      [ $# -ge 2 ] || { echo "--out needs a folder" >&2; exit 2; }
      out="$2"
      shift 2
      ;;
    *)
      args+=("$1")
      shift
      ;;
  esac
done

commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ "$commit" != unknown ] && ! git diff --quiet HEAD 2>/dev/null; then
  commit="$commit (with uncommitted changes)"
fi

exec benchmarks/postgresql.sh --shapes cluster --cluster-out "$out" --command-line "$command_line" --commit "$commit" ${args[@]+"${args[@]}"}
