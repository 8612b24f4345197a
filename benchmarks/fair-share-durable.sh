#!/usr/bin/env bash
# Fair share across tenants on the durable queue (see README.md, "Fair share"): 10 tenants offering 150% of the
# fleet's capacity, one of them 20x each of the others, through 3 consumer processes (4 workers each, handlers that
# block 50 ms) on a throwaway PostgreSQL, fair share (MaxRunningPerTenant set) and plain FIFO claims alternating in the
# same run. Each handler records its own start and end in a witness table of the benchmark's (never the library's);
# every figure comes from it: per tenant the p99 queue wait (and one quiet tenant alone at the same rate), the shares
# against the weights while every tenant is backlogged, the goodput against FIFO's, and the most items of one tenant
# running at once. It is the PostgreSQL benchmark's driver with --shapes fair (postgresql.sh builds it, starts and
# stops the server); markdown on stdout, progress on stderr.
#
#   benchmarks/fair-share-durable.sh             # 2 rounds of 15 s per mode, backlogged runs of 6 s (about 3-4 minutes)
#   benchmarks/fair-share-durable.sh --smoke     # a few seconds per step: checks that everything runs, measures nothing
#   benchmarks/fair-share-durable.sh --fair-rounds 3 --fair-seconds 20 --fair-bound 6
#
# Options (the driver's): --fair-consumers P, --fair-workers W, --fair-handler-ms MS, --fair-load X, --fair-tenants N,
# --fair-heavy X, --fair-heavy-weight W, --fair-bound B (MaxRunningPerTenant; default two thirds of the fleet's workers),
# --fair-seconds S, --fair-warmup S, --fair-rounds R, --fair-backlog-seconds S, --fair-reference-seconds S, --fsync on|off.
set -euo pipefail
cd "$(dirname "$0")/.."

command_line="benchmarks/fair-share-durable.sh $*"
args=()
for argument in "$@"; do
  case "$argument" in
    --smoke) args+=(--quick) ;;
    *) args+=("$argument") ;;
  esac
done

commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ "$commit" != unknown ] && ! git diff --quiet HEAD 2>/dev/null; then
  commit="$commit (with uncommitted changes)"
fi

exec benchmarks/postgresql.sh --shapes fair --command-line "$command_line" --commit "$commit" ${args[@]+"${args[@]}"}
