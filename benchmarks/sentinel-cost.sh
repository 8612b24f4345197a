#!/usr/bin/env bash
# What the starvation sentinel (services.AddStarvationSentinel(), package BoundedWork.Diagnostics) costs the app it
# runs in. The MVC app of the sentinel's tests (tests/BoundedWork.Diagnostics.TestApp, Release), with the sentinel at
# its defaults and without it, in three states:
#   idle      no requests for 20 s: the app's CPU time and resident memory;
#   healthy   'hey' sends GET /ping (an MVC action that returns a constant) from 32 clients for 15 s: requests per
#             second, p50 and p99 latency, the app's CPU time;
#   starved   'hey' sends GET /orders/7 (blocks on Task.Result) from 200 clients for 20 s: the app's CPU time, its peak
#             resident memory, the longest pause a bystander thread of the app saw (the runtime suspends the app for
#             each stack sample), and how long the diagnosis took (from the sentinel's log event).
# Each run starts a fresh app per mode (which mode goes first alternates); the table gives medians over the runs.
#
#   benchmarks/sentinel-cost.sh              3 runs (about 8 minutes once built)
#   benchmarks/sentinel-cost.sh --quick      1 run: checks that every step works
#   options: --runs N, --out DIR (default benchmarks/results/sentinel-cost), --no-build
#
# Needs 'hey' (apt-get install hey) and bc. Binds to 127.0.0.1 only; every process it starts is stopped on
# exit; every step is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=3; BUILD=1; OUT="benchmarks/results/sentinel-cost"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) RUNS=1 ;;
    --runs) RUNS="$2"; shift ;;
    --no-build) BUILD=0 ;;
    --out) OUT="$2"; shift ;;
    *) echo "Unknown option $1 (use --quick, --runs N, --no-build, --out DIR)" >&2; exit 2 ;;
  esac
  shift
done

command -v hey >/dev/null || { echo "hey is needed (apt-get install hey)" >&2; exit 1; }
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
if [ "$BUILD" = 1 ]; then
  dotnet build -c Release tests/BoundedWork.Diagnostics.TestApp >/dev/null
fi
APP=tests/BoundedWork.Diagnostics.TestApp/bin/Release/net10.0/BoundedWork.Diagnostics.TestApp.dll
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
TICKS=$(getconf CLK_TCK)

STARTED=()
stop_all() { local p; for p in "${STARTED[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; sleep 0.5; for p in "${STARTED[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; }
trap stop_all EXIT
trap 'exit 130' INT TERM

cpu_seconds() { awk -v t="$TICKS" '{ print ($14 + $15) / t }' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }


hey_field() { # file pattern: a figure from hey's summary
  case "$2" in
    rps) awk '/Requests\/sec:/ { print $2 }' "$1" ;;
    p50) awk '/ 50% in / { print $3 * 1000 }' "$1" ;;
    p99) awk '/ 99% in / { print $3 * 1000 }' "$1" ;;
  esac
}

printf 'run\tmode\tidle_cpu_s\tidle_rss_mb\tping_rps\tping_p50_ms\tping_p99_ms\tping_cpu_s\tstarved_cpu_s\tstarved_peak_rss_mb\tstarved_max_pause_ms\tdiagnosis_ms\n' > "$OUT/runs.tsv"
for run in $(seq 1 "$RUNS"); do
  modes="off default"; [ $((run % 2)) = 0 ] && modes="default off"   # alternate which goes first
  for mode in $modes; do
    log="$OUT/$run-$mode-app.log"
    dotnet "$APP" --urls http://127.0.0.1:0 --Sentinel "$mode" --MeasurePauses true >"$log" 2>&1 </dev/null &
    PID=$!; STARTED+=("$PID"); URL=""
    for _ in $(seq 1 600); do
      URL=$(sed -n 's/^LISTENING //p' "$log" | head -n 1); [ -n "$URL" ] && break
      kill -0 "$PID" 2>/dev/null || { cat "$log"; exit 1; }; sleep 0.1
    done
    [ -n "$URL" ] || { echo "the app did not listen within 60 s" >&2; exit 1; }
    curl -s -m 10 "$URL/ping" >/dev/null; sleep 5
    c0=$(cpu_seconds "$PID"); sleep 20; c1=$(cpu_seconds "$PID")
    idle_cpu=$(echo "$c1 - $c0" | bc); idle_rss=$(( $(status_kb "$PID" VmRSS) / 1024 ))

    c0=$(cpu_seconds "$PID")
    timeout 60 hey -z 15s -c 32 "$URL/ping" > "$OUT/$run-$mode-ping.txt"
    c1=$(cpu_seconds "$PID"); ping_cpu=$(echo "$c1 - $c0" | bc)

    mark=$(wc -l < "$log")
    c0=$(cpu_seconds "$PID")
    timeout 90 hey -z 20s -c 200 -t 60 "$URL/orders/7" > "$OUT/$run-$mode-starved.txt" || true
    c1=$(cpu_seconds "$PID"); starved_cpu=$(echo "$c1 - $c0" | bc)
    peak=$(( $(status_kb "$PID" VmHWM) / 1024 ))
    pause=$(tail -n +"$mark" "$log" | awk '/^PAUSE / { if ($2 > m) m = $2 } END { print m + 0 }')
    diag=$( (grep -o 'diagnosed in [0-9]* ms' "$log" || true) | head -n 1 | awk '{ print $3 }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$mode" "$idle_cpu" "$idle_rss" \
      "$(hey_field "$OUT/$run-$mode-ping.txt" rps)" "$(hey_field "$OUT/$run-$mode-ping.txt" p50)" "$(hey_field "$OUT/$run-$mode-ping.txt" p99)" \
      "$ping_cpu" "$starved_cpu" "$peak" "$pause" "${diag:-}" >> "$OUT/runs.tsv"
    kill -TERM "$PID" 2>/dev/null || true; sleep 1
  done
done

python3 - "$OUT/runs.tsv" > "$OUT/results.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def med(mode, key):
    values = [float(r[key]) for r in rows if r["mode"] == mode and r[key] not in ("",)]
    return statistics.median(values) if values else float("nan")
cols = [("idle_cpu_s", "idle: CPU in 20 s (s)"), ("idle_rss_mb", "idle: RSS (MB)"), ("ping_rps", "healthy: /ping req/s"),
        ("ping_p50_ms", "healthy: p50 (ms)"), ("ping_p99_ms", "healthy: p99 (ms)"), ("ping_cpu_s", "healthy: CPU in 15 s (s)"),
        ("starved_cpu_s", "starved: CPU in 20 s (s)"), ("starved_peak_rss_mb", "starved: peak RSS (MB)"),
        ("starved_max_pause_ms", "starved: longest pause (ms)"), ("diagnosis_ms", "diagnosis took (ms)")]
print("| | without the sentinel | with the sentinel (defaults) |")
print("|---|---|---|")
for key, title in cols:
    print(f"| {title} | {med('off', key):.2f} | {med('default', key):.2f} |")
print()
print(f"Medians of {len(rows) // 2} runs; runs.tsv beside this file lists each.")
PY
cat "$OUT/results.md"
