#!/usr/bin/env bash
# What 'bw doctor' costs: how long a run takes, and what it costs the process it diagnoses (CPU time, and the pause
# a bystander request feels while the sample profiler suspends the runtime for each stack sample). Measured on the
# payment-callback sample in two states:
#   healthy  the bounded endpoint under load: a bystander GET /ping at a fixed rate, with and without a doctor run;
#   starved  the naive-sync endpoint under load (the incident): the doctor's own duration and CPU in the target.
# Each row alternates a window without the doctor and a window with it, of the same length, RUNS times; the table
# gives medians and the with/without ratios.
#
#   benchmarks/doctor-cost.sh              5 runs per state (about 3 minutes once built)
#   benchmarks/doctor-cost.sh --quick      1 run per state: checks that every step works, measures nothing
#   options: --runs N, --out DIR (default benchmarks/results/doctor-cost), --no-build
#
# Binds to 127.0.0.1 only; every process it starts is stopped on exit; every step is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=5; BUILD=1; OUT="benchmarks/results/doctor-cost"
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

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
if [ "$BUILD" = 1 ]; then
  dotnet build -c Release samples/PaymentCallbacks >/dev/null
  dotnet build -c Release samples/PaymentCallbacks/LoadDriver >/dev/null
  dotnet build -c Release src/BoundedWork.Cli >/dev/null
fi
APP=samples/PaymentCallbacks/bin/Release/net10.0/PaymentCallbacks.dll
DRIVER=samples/PaymentCallbacks/LoadDriver/bin/Release/net10.0/PaymentCallbacks.LoadDriver.dll
BW=src/BoundedWork.Cli/bin/Release/net10.0/bw.dll
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
TICKS=$(getconf CLK_TCK)
WINDOW=6       # seconds per window: longer than a doctor run (3 s of counters, then the method rundown)

STARTED=()
stop_all() { local p; for p in "${STARTED[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; sleep 0.5; for p in "${STARTED[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; }
trap stop_all EXIT
trap 'exit 130' INT TERM

cpu_seconds() { # pid: user + system CPU seconds so far
  awk -v t="$TICKS" '{ print ($14 + $15) / t }' "/proc/$1/stat"
}

serve() { # log, settings...: starts the sample, sets PID and URL
  local log="$1"; shift
  dotnet "$APP" serve --port 0 --environment Development "$@" >"$log" 2>&1 &
  PID=$!; STARTED+=("$PID"); URL=""
  for _ in $(seq 1 600); do
    URL=$(sed -n 's/^LISTENING //p' "$log" | head -n 1); [ -n "$URL" ] && return 0
    kill -0 "$PID" 2>/dev/null || { cat "$log"; exit 1; }; sleep 0.1
  done
  echo "the sample did not listen within 60 s" >&2; exit 1
}

window() { # state run with|without: one measured window; appends a line to $OUT/windows.tsv
  local state="$1" run="$2" mode="$3" ping="$OUT/$1-$2-$3-ping.json" before after took=""
  timeout 60 dotnet "$DRIVER" open --url "$URL/ping" --rate 200 --duration "$WINDOW" --drain 5 --json "$ping" >/dev/null &
  local bystander=$!
  before=$(cpu_seconds "$PID")
  if [ "$mode" = with ]; then
    sleep 1
    local t0; t0=$(date +%s.%N)
    timeout 120 dotnet "$BW" doctor -p "$PID" --json >"$OUT/$state-$run-doctor.json" || true   # exit 4 means starved
    took=$(echo "$(date +%s.%N) - $t0" | bc)
  fi
  wait "$bystander" || true
  after=$(cpu_seconds "$PID")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$state" "$run" "$mode" "${took:-}" "$(echo "$after - $before" | bc)" \
    "$(jq -r '[.p50Ms, .p99Ms, .maxMs] | @tsv' "$ping")" >> "$OUT/windows.tsv"
}

command -v jq >/dev/null || { echo "jq is needed (apt-get install jq)" >&2; exit 1; }
command -v bc >/dev/null || { echo "bc is needed (apt-get install bc)" >&2; exit 1; }
printf 'state\trun\tmode\tdoctor_s\ttarget_cpu_s\tping_p50_ms\tping_p99_ms\tping_max_ms\n' > "$OUT/windows.tsv"

for state in healthy starved; do
  if [ "$state" = healthy ]; then
    serve "$OUT/$state-server.log" --SideEffect:MinDelayMs 1 --SideEffect:MaxDelayMs 5
    endpoint=bounded; rate=500
  else
    serve "$OUT/$state-server.log" --SideEffect:MinDelayMs 1000 --SideEffect:MaxDelayMs 1000
    endpoint=naive-sync; rate=50
  fi
  total=$(( RUNS * 2 * (WINDOW + 8) + 20 ))
  timeout $((total + 30)) dotnet "$DRIVER" open --url "$URL/callbacks/$endpoint" --method POST --rate "$rate" --duration "$total" --drain 1 >/dev/null 2>&1 &
  STARTED+=("$!")
  sleep 10   # let the load settle (and, for starved, the pool fall behind)
  for run in $(seq 1 "$RUNS"); do
    window "$state" "$run" without
    window "$state" "$run" with
  done
  kill -TERM "$PID" 2>/dev/null || true
done

# Medians per state and mode, and the with/without ratios.
python3 - "$OUT/windows.tsv" > "$OUT/results.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def med(state, mode, key):
    values = [float(r[key]) for r in rows if r["state"] == state and r["mode"] == mode and r[key] not in ("", "null")]
    return statistics.median(values) if values else float("nan")
print("| state | doctor run (s) | target CPU in window, without -> with (s) | /ping p50 without -> with (ms) | /ping p99 | /ping max |")
print("|---|---|---|---|---|---|")
for s in ("healthy", "starved"):
    cells = [f"{med(s,'with','doctor_s'):.2f}"]
    for key in ("target_cpu_s", "ping_p50_ms", "ping_p99_ms", "ping_max_ms"):
        a, b = med(s, "without", key), med(s, "with", key)
        if key.startswith("ping") and s == "starved":
            cells.append("-")  # the bystander waits for the starved pool itself
        else:
            cells.append(f"{a:.2f} -> {b:.2f} (x{b / a:.2f})" if a else f"{a:.2f} -> {b:.2f}")
    print(f"| {s} | " + " | ".join(cells) + " |")
print()
print(f"Medians of {len(rows) // 4} runs per state; windows.tsv beside this file lists every window. In the starved state /ping waits for the starved pool itself, so only the doctor's duration and CPU are given.")
PY
cat "$OUT/results.md"
