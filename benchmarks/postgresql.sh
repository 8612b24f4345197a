#!/usr/bin/env bash
# End-to-end benchmark of the durable work queue (BoundedWork.PostgreSql; see README.md, "Durable queue on
# PostgreSQL"). Builds the driver in Release; the driver starts its own throwaway PostgreSQL cluster (initdb in a
# temporary folder, Unix socket only; needs Debian's postgresql package or BOUNDEDWORK_PG_BIN), runs the producers
# in its own process and the consumer nodes as child processes, and prints markdown tables on stdout (the rows, what
# the server ran per item, and with --bloat the table's size); progress goes to stderr.
#
#   benchmarks/postgresql.sh                      # 20,000 items per row, 1/2/4 consumer processes, latency at 200/s,
#                                                 # bulk insert, and 200,000 items drained by 1/2/4 processes, the library
#                                                 # and a hand-written reference alternately, 3 rounds each (~15 min)
#   benchmarks/postgresql.sh --quick              # 2,000 items, 1 s of latency: checks that everything runs (<1 min)
#   benchmarks/postgresql.sh --bloat 120          # adds 120 s of steady load and the table-size samples
#   benchmarks/postgresql.sh --fsync off          # the server without fsync (the tests' setting): no disk flush per commit
#   benchmarks/postgresql.sh --shapes drain       # only the shape others publish: 200,000 items bulk-inserted, then drained
#   benchmarks/postgresql.sh --shapes drain --consumers 1,2 --drain-rounds 3
#                                                 # the drain, library against the reference (Npgsql only, SKIP LOCKED
#                                                 # claims, outcomes in batches), alternating, medians and their ratio
#   benchmarks/postgresql.sh --shapes bulk        # only the bulk insert: EnqueueManyAsync against binary COPY, alternating
#   benchmarks/postgresql.sh --shapes cluster     # only the cluster limits (not in the default shapes; cluster-limits.sh runs it)
#
# Options: --quick, --items N, --warmup-items N, --producers P, --consumers 1,2,4, --workers W, --latency-rate R,
# --latency-seconds S, --latency-warmup S, --bloat SECONDS, --bloat-rate R, --bloat-sample S, --fsync on|off,
# --statements, --shapes per-item,latency,bulk,drain,cluster, --drain-items N, --bulk-batch B, --drain-claims-per-worker C,
# --bulk-rounds R, --drain-rounds R.
#
# The driver stops its consumers and the server however it ends (Ctrl-C included); if the driver itself is killed,
# this script stops the server it left behind (SIGQUIT to the postmaster: an immediate shutdown) and deletes its folder.
set -euo pipefail
cd "$(dirname "$0")/.."

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
PROJECT=benchmarks/BoundedWork.PostgreSql.Benchmark
dotnet build "$PROJECT/BoundedWork.PostgreSql.Benchmark.csproj" -c Release --nologo -v quiet >&2

STATE=$(mktemp -d)
cleanup() {
  local data pid
  if [ -s "$STATE/server-dir" ]; then
    data=$(cat "$STATE/server-dir")
    if [ -f "$data/postmaster.pid" ]; then
      pid=$(head -n 1 "$data/postmaster.pid")
      echo "stopping the PostgreSQL server the driver left behind (pid $pid)" >&2
      kill -QUIT "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -rf "$(dirname "$data")"
  fi
  rm -rf "$STATE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

dotnet "$PROJECT/bin/Release/net10.0/BoundedWork.PostgreSql.Benchmark.dll" run --server-dir-file "$STATE/server-dir" "$@"
