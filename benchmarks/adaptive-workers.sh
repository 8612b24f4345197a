#!/usr/bin/env bash
# The adaptive-workers benchmark: the payment-callback sample in front of a dependency of limited capacity (K
# connections: flat run time up to K concurrent calls, then growing with concurrency; K unknown to the executor), in
# four scenarios, each against fixed at the minimum, fixed at the maximum, a sweep of fixed counts (the oracle is the
# best of them), the naive ThreadPool endpoint, and the adaptive mode. The seed scenario also replays the manual fix
# (an operator resizing to 16 workers through the admin API).
#   1. seed:       2 workers under 90% of what 8 do (1-5 ms side effects), K = 32
#   2. saturating: K = 12 at 5-15 ms, thrashing a little past the knee, 130% of K's capacity offered; 2 to 64 workers
#   3. bursts:     2,000/s on and 200/s off every 30 s, the dependency slowing to twice its delay and back
#   4. cpu-burst:  CPU-bound side effects (about 0.8 ms of hashing) at 1,200/s, a rate 2 workers sustain on 2 vCPUs,
#                  with a neighbour's CPU burst (two spinning threads) in the middle half; 1 to 64 workers
# First it runs the same scenarios in simulation (deterministic; benchmarks/BoundedWork.AdaptiveSimulation).
#
#   benchmarks/adaptive-workers.sh            full run (about 40 minutes)
#   benchmarks/adaptive-workers.sh --quick    every step, a few seconds each: checks the harness, measures nothing
#   benchmarks/adaptive-workers.sh --report-only --out DIR    the table and plots again from DIR's raw results
#   options: --out DIR (default benchmarks/results/adaptive-workers), --no-build, --scenarios "seed saturating bursts cpu-burst"
#
# The adaptive contender is the payments executor with AdaptiveMode On, between the scenario's minimum (where it
# starts) and maximum, set through configuration (--BoundedWork:Executors:payments:AdaptiveMode On ...). Extra
# settings for it (for example another AdaptiveMaxWorkerCount) go in ADAPTIVE_SERVER_ARGS.
# Everything binds to 127.0.0.1, every step is bounded in time, and every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

QUICK=0; BUILD=1; REPORT_ONLY=0; OUT="benchmarks/results/adaptive-workers"; SCENARIOS="seed saturating bursts cpu-burst"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --no-build) BUILD=0 ;;
    --report-only) REPORT_ONLY=1; BUILD=0 ;;
    --out) OUT="$2"; shift ;;
    --scenarios) SCENARIOS="$2"; shift ;;
    *) echo "Unknown option $1 (use --quick, --no-build, --report-only, --out DIR, --scenarios LIST)" >&2; exit 2 ;;
  esac
  shift
done
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
ADAPTIVE_SERVER_ARGS="${ADAPTIVE_SERVER_ARGS:-}"

if ! command -v gnuplot >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "== installing gnuplot"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq gnuplot-nox
fi

APP="$ROOT/samples/PaymentCallbacks/bin/Release/net10.0/PaymentCallbacks.dll"
DRIVER="$ROOT/samples/PaymentCallbacks/LoadDriver/bin/Release/net10.0/PaymentCallbacks.LoadDriver.dll"
SIM="$ROOT/benchmarks/BoundedWork.AdaptiveSimulation/bin/Release/net10.0/BoundedWork.AdaptiveSimulation.dll"
if [ "$BUILD" = 1 ]; then
  echo "== build (Release)"
  for project in samples/PaymentCallbacks/PaymentCallbacks.csproj samples/PaymentCallbacks/LoadDriver/PaymentCallbacks.LoadDriver.csproj \
                 benchmarks/BoundedWork.AdaptiveSimulation/BoundedWork.AdaptiveSimulation.csproj; do
    dotnet build -c Release -v q -nologo "$project" >/dev/null
  done
fi

if [ "$REPORT_ONLY" = 1 ]; then
  [ -d "$OUT/raw" ] || { echo "No raw results in $OUT/raw" >&2; exit 2; }
else
  rm -rf "$OUT"; mkdir -p "$OUT/raw"
fi
OUT=$(cd "$OUT" && pwd); RAW="$OUT/raw"

CHILDREN=()
cleanup() {
  local pid
  for pid in "${CHILDREN[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  sleep 0.3
  for pid in "${CHILDREN[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

driver() { dotnet "$DRIVER" "$@"; }
quick_flag() { [ "$QUICK" = 1 ] && echo --quick || true; }

SERVER_PID=""; URL=""
start_server() { # dir, settings...
  local dir="$1"; shift
  dotnet "$APP" serve --port 0 --environment Development --ShutdownTimeoutSeconds 2 \
    --BoundedWork:Executors:payments:QueueCapacity 2000 "$@" >"$dir/server.log" 2>&1 &
  SERVER_PID=$!; CHILDREN+=("$SERVER_PID"); URL=""
  local i
  for i in $(seq 1 600); do
    URL=$(sed -n 's/^LISTENING //p' "$dir/server.log" | head -n 1)
    [ -n "$URL" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "server exited:"; cat "$dir/server.log"; exit 1; }
    sleep 0.1
  done
  echo "server did not listen within 60 s"; exit 1
}
stop_server() {
  local i
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  for i in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
}

run_contender() { # scenario contender endpoint server-settings...
  local scenario="$1" contender="$2" endpoint="$3"; shift 3
  local dir="$RAW/$scenario/$contender"; mkdir -p "$dir"
  echo "== $scenario: $contender ($endpoint)"
  # shellcheck disable=SC2046
  start_server "$dir" $(driver scenario-args --scenario "$scenario" $(quick_flag)) "$@"
  driver open --url "$URL/ping" --rate 50 --duration 0.5 --drain 5 >/dev/null
  # A neighbour's CPU burst (cpu-burst): processes of their own that spin, timed from the load's start.
  local neighbour at secs threads t
  neighbour=$(driver scenario-args --scenario "$scenario" $(quick_flag) --what neighbour)
  if [ -n "$neighbour" ]; then
    read -r at secs threads <<<"$neighbour"
    for t in $(seq 1 "$threads"); do
      ( sleep "$at"; exec timeout "$secs" bash -c 'while :; do :; done' ) &
      CHILDREN+=("$!")
    done
  fi
  timeout $(( $(driver scenario-args --scenario "$scenario" $(quick_flag) --what duration | cut -d. -f1) + 120 )) \
    dotnet "$DRIVER" scenario --base "$URL" --scenario "$scenario" --contender "$contender" --endpoint "$endpoint" $(quick_flag) --out "$dir" >/dev/null
  stop_server
}

if [ "$REPORT_ONLY" = 0 ]; then
{
  echo "date:      $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit:    $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "cpu:       $(nproc) x $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
  echo "load avg:  $(cut -d' ' -f1-3 /proc/loadavg) (at start)"
  echo "command:   benchmarks/adaptive-workers.sh $(quick_flag)"
  echo "adaptive:  AdaptiveMode On between each scenario's minimum and maximum ${ADAPTIVE_SERVER_ARGS}"
} > "$OUT/machine.txt"
cat "$OUT/machine.txt"

echo "== simulation (deterministic)"
dotnet "$SIM" scenarios --out "$OUT/simulation" >/dev/null

W="--BoundedWork:Executors:payments"
for scenario in $SCENARIOS; do
  min=$(driver scenario-args --scenario "$scenario" $(quick_flag) --what min)
  max=$(driver scenario-args --scenario "$scenario" $(quick_flag) --what max)
  # The adaptive contender first: the contender under test gets the start of the run.
  # shellcheck disable=SC2086
  run_contender "$scenario" adaptive bounded "$W:WorkerCount" "$min" "$W:MaxWorkerCount" "$max" \
    "$W:AdaptiveMode" On "$W:AdaptiveMinWorkerCount" "$min" "$W:AdaptiveMaxWorkerCount" "$max" $ADAPTIVE_SERVER_ARGS
  run_contender "$scenario" fixed-min bounded "$W:WorkerCount" "$min" "$W:MaxWorkerCount" "$max"
  run_contender "$scenario" fixed-max bounded "$W:WorkerCount" "$max" "$W:MaxWorkerCount" "$max"
  for n in $(driver scenario-args --scenario "$scenario" $(quick_flag) --what sweep); do
    run_contender "$scenario" "fixed-$n" bounded "$W:WorkerCount" "$n" "$W:MaxWorkerCount" "$max"
  done
  run_contender "$scenario" threadpool naive "$W:WorkerCount" "$min" "$W:MaxWorkerCount" "$max"
  if [ -n "$(driver scenario-args --scenario "$scenario" $(quick_flag) --what manual-at)" ]; then
    run_contender "$scenario" manual bounded "$W:WorkerCount" "$min" "$W:MaxWorkerCount" "$max"
  fi
done

fi

echo "== report"
driver scenario-report --results "$OUT"
echo "== plots"
cd "$OUT"
for scenario in $SCENARIOS; do
  series=""; waits=""; runs=""
  for dir in raw/"$scenario"/*/; do
    name=$(basename "$dir")
    # The sweep stays in the table; of its counts only the oracle (picked by the report) is drawn.
    case "$name" in fixed-[0-9]*) [ "$name" = "$(cat "raw/$scenario/oracle.txt" 2>/dev/null)" ] || continue; name="oracle ($name)" ;; esac
    [ -f "$dir/series.csv" ] || continue
    series="$series${series:+, }\"$dir/series.csv\" using 1:2 skip 1 with steps lw 2 title \"$name\""
    waits="$waits${waits:+, }\"$dir/series.csv\" using 1:5 skip 1 with lines title \"$name\""
    runs="$runs${runs:+, }\"$dir/series.csv\" using 1:8 skip 1 with lines title \"$name\""
  done
  [ -n "$series" ] || continue
  gnuplot <<GP
set terminal pngcairo size 1000,900 font ",10"
set datafile separator ","
set output "$scenario.png"
set multiplot layout 3,1 title "Adaptive workers, $scenario scenario: workers, queue wait and run time over time"
set grid
set key outside right
set xlabel "seconds since the load started"
set ylabel "workers (ThreadPool threads for threadpool)"
plot $series
set ylabel "oldest queued item (ms)"
plot $waits
set ylabel "run time p99 per sample (ms)"
set logscale y
plot $runs
unset multiplot
GP
done
cd "$ROOT"

echo "Results: $OUT/adaptive-workers.md, $OUT/simulation/simulation.md, $OUT/*.png"
