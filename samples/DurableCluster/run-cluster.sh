#!/usr/bin/env bash
# Three nodes of one durable queue ("durable-demo") on a throwaway PostgreSQL, all on this machine's loopback.
#
#   samples/DurableCluster/run-cluster.sh                 # start, print what to try, run until Ctrl-C
#   samples/DurableCluster/run-cluster.sh --seconds 60    # the same, and stop by itself after 60 s
#   samples/DurableCluster/run-cluster.sh --check         # CI: enqueue, check every item completes, change a fleet-wide
#                                                         # setting with bw, check every node applied it; exit 0 or 1
# Options: --nodes N (3), --downstream-ms MS (200), --seconds S, --check, --no-build, -c|--configuration C (Release).
#
# The database is PostgreSQL's own binaries (Debian's postgresql package, or BOUNDEDWORK_PG_BIN): initdb into a
# temporary folder, a Unix socket in that folder, no TCP port. Whatever happens (Ctrl-C, a failure, the end of
# --seconds) the script stops the nodes and the server it started and deletes the folder.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

NODES=3 DOWNSTREAM_MS=200 SECONDS_TO_RUN="" CHECK=0 BUILD=1 CONFIGURATION=Release
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES="$2"; shift 2 ;;
    --downstream-ms) DOWNSTREAM_MS="$2"; shift 2 ;;
    --seconds) SECONDS_TO_RUN="$2"; shift 2 ;;
    --check) CHECK=1; shift ;;
    --no-build) BUILD=0; shift ;;
    -c|--configuration) CONFIGURATION="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$NODES" =~ ^[1-9][0-9]?$ ]] || { echo "--nodes: 1 to 99" >&2; exit 2; }
[[ -z "$SECONDS_TO_RUN" || "$SECONDS_TO_RUN" =~ ^[1-9][0-9]*$ ]] || { echo "--seconds: a positive whole number" >&2; exit 2; }
for tool in curl jq; do command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 2; }; done

PG_BIN="${BOUNDEDWORK_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
[ -x "$PG_BIN/pg_ctl" ] || { echo "PostgreSQL's server binaries were not found (install Debian's postgresql package or set BOUNDEDWORK_PG_BIN)" >&2; exit 2; }

SAMPLE_DLL="$ROOT/samples/DurableCluster/bin/$CONFIGURATION/net10.0/DurableCluster.dll"
BW_DLL="$ROOT/src/BoundedWork.Cli/bin/$CONFIGURATION/net10.0/bw.dll"
if [ "$BUILD" = 1 ]; then
  echo "building the sample and bw ($CONFIGURATION)..." >&2
  dotnet build "$ROOT/samples/DurableCluster/DurableCluster.csproj" -c "$CONFIGURATION" --nologo -v quiet >&2
  dotnet build "$ROOT/src/BoundedWork.Cli/BoundedWork.Cli.csproj" -c "$CONFIGURATION" --nologo -v quiet >&2
fi
bw() { dotnet "$BW_DLL" "$@"; }

STATE="$(mktemp -d /tmp/durable-cluster.XXXXXX)"
PIDS=()
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  local code=$?
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  jobs -p | xargs -r kill 2>/dev/null || true # the sleep, if any
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -f "$STATE/data/postmaster.pid" ]; then
    as_postgres "$PG_BIN/pg_ctl" -D "$STATE/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  if [ "$code" != 0 ] && [ "$CHECK" = 1 ]; then
    for log in "$STATE"/node-*.log; do [ -f "$log" ] && { echo "---- $log (last 30 lines)" >&2; tail -n 30 "$log" >&2; }; done
  fi
  rm -rf "$STATE"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { echo "FAILED: $*" >&2; exit 1; }

# ---- the database
mkdir -p "$STATE/data"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$STATE"
as_postgres "$PG_BIN/initdb" -D "$STATE/data" -U postgres --auth=trust -E UTF8 --no-sync >"$STATE/initdb.log" 2>&1 \
  || { cat "$STATE/initdb.log" >&2; fail "initdb"; }
as_postgres "$PG_BIN/pg_ctl" -D "$STATE/data" -l "$STATE/server.log" -w -t 60 \
  -o "-c listen_addresses='' -k $STATE -p 5432 -c max_connections=200" start >/dev/null \
  || { cat "$STATE/server.log" >&2; fail "PostgreSQL did not start"; }
CONNECTION="Host=$STATE;Port=5432;Username=postgres;Database=postgres"

# ---- the nodes
URLS=()
start_node() { # start_node INDEX: starts node-INDEX, sets URLS[INDEX] and PIDS[INDEX]
  local i=$1 log="$STATE/node-$1.log"
  : >"$log"
  # In a job of its own (set -m): a script's background job would ignore SIGINT, so 'kill -INT' (a Ctrl-C) would not
  # stop the node; and Ctrl-C in this terminal reaches the script alone, which stops the nodes with SIGTERM.
  set -m
  ASPNETCORE_ENVIRONMENT=Development dotnet "$SAMPLE_DLL" --port 0 --node "node-$i" --DownstreamMs "$DOWNSTREAM_MS" \
    --ConnectionStrings:durable "$CONNECTION" >"$log" 2>&1 &
  PIDS[$i]=$!
  set +m
  for _ in $(seq 1 600); do
    if grep -q '^LISTENING ' "$log"; then URLS[$i]="$(grep -m1 '^LISTENING ' "$log" | cut -d' ' -f2)"; return 0; fi
    kill -0 "${PIDS[$i]}" 2>/dev/null || { cat "$log" >&2; fail "node-$i exited at start"; }
    sleep 0.1
  done
  fail "node-$i did not start within 60 s"
}
for i in $(seq 1 "$NODES"); do start_node "$i"; done

CLUSTER_PATH=/bounded-work/queues/durable-demo/cluster
cluster() { curl -sf "${URLS[${1:-1}]}$CLUSTER_PATH"; }

if [ "$CHECK" = 1 ]; then
  # Bounded: every wait below gives up at the deadline (and the script fails) rather than hang.
  deadline=$(( $(date +%s) + ${SECONDS_TO_RUN:-120} ))
  wait_for() { # wait_for DESCRIPTION COMMAND...: retries COMMAND until it succeeds or the deadline passes
    local what=$1; shift
    until "$@"; do [ "$(date +%s)" -lt "$deadline" ] || fail "$what (gave up at the deadline)"; sleep 0.2; done
  }
  live_nodes() { [ "$(cluster | jq '.nodes | length')" = "$NODES" ]; }
  wait_for "all $NODES nodes in the cluster view" live_nodes
  enqueued="$(curl -sf -X POST "${URLS[1]}/enqueue?count=40&keys=3")" || fail "POST /enqueue"
  echo "enqueued: $enqueued"
  all_done() { cluster | jq -e '.storage.completed >= 40 and .storage.ready == 0 and .storage.running == 0 and .storage.scheduled == 0 and .storage.deadLettered == 0' >/dev/null; }
  wait_for "the 40 items completed" all_done
  echo "completed: $(cluster | jq -c '.storage')"
  echo "handled per node: $(for i in $(seq 1 "$NODES"); do curl -sf "${URLS[$i]}/node" | jq -r .handled; done | paste -sd' ')"

  bw cluster set durable-demo --max-running 4 --workers-per-node 2 -p "${PIDS[1]}" || fail "bw cluster set"
  version="$(cluster | jq '.settings.version')"
  [ "$version" -ge 1 ] || fail "the settings version is $version after bw cluster set"
  followed() { # every node, read through every node's console, runs the new version and 2 workers
    local i
    for i in $(seq 1 "$NODES"); do
      cluster "$i" | jq -e --argjson v "$version" --argjson n "$NODES" \
        '(.nodes | length) == $n and all(.nodes[]; .settingsVersion == $v and .workers == 2) and .settings.maxRunning == 4' >/dev/null || return 1
    done
  }
  wait_for "every node applied settings version $version" followed
  bw cluster durable-demo -p "${PIDS[2]}"
  # The console refuses a bad value, naming the field, and changes nothing.
  bad="$(curl -s -X PATCH -H 'X-BoundedWork-Admin: run-cluster' -H 'Content-Type: application/json' -d '{"maxRunning":0}' "${URLS[1]}$CLUSTER_PATH")"
  echo "$bad" | jq -e '.status == 400 and (.errors.maxRunning | length) == 1' >/dev/null || fail "PATCH {\"maxRunning\":0} answered $bad"
  [ "$(cluster | jq '.settings.version')" = "$version" ] || fail "a refused PATCH changed the settings version"
  echo "OK: $NODES nodes, 40 items completed, settings version $version applied by every node"
  exit 0
fi

cat <<MSG

  $NODES nodes of the durable queue 'durable-demo' are running (each item blocks a worker for ${DOWNSTREAM_MS} ms).

$(for i in $(seq 1 "$NODES"); do echo "    node-$i  pid ${PIDS[$i]}  ${URLS[$i]}/bounded-work/   (dashboard)"; done)

  Try, in another terminal:
    alias bw='dotnet $BW_DLL'
    curl -X POST '${URLS[1]}/enqueue?count=200&keys=5'     # 200 items, half of them on 5 ordering keys
    bw cluster durable-demo -p ${PIDS[1]}                      # the nodes, the limits and the stored items
    bw cluster set durable-demo --max-running 4 -p ${PIDS[1]}  # every node follows within a second or two
    bw cluster set durable-demo --workers-per-node 8 -p ${PIDS[1]}
    curl -s ${URLS[1]}$CLUSTER_PATH | jq .
    kill -9 ${PIDS[2]}     # node-2 dies: its row expires after 3 heartbeats, its items run elsewhere after the lease (10 s)
    kill -INT ${PIDS[3]}   # node-3 stops cleanly (as Ctrl-C would): its row leaves at once
  Node logs: $STATE/node-*.log. Ctrl-C stops everything$([ -n "$SECONDS_TO_RUN" ] && echo " (or wait $SECONDS_TO_RUN s)").

MSG
# sleep in the background and wait for it: bash runs a trap only once its foreground command ends, and 'wait' ends
# at once on a signal (a SIGTERM to this script stops everything now, not when the sleep ends).
if [ -n "$SECONDS_TO_RUN" ]; then sleep "$SECONDS_TO_RUN" & wait $!; else while :; do sleep 3600 & wait $!; done; fi
