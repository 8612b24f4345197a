#!/usr/bin/env bash
# End-to-end benchmark of the payment-callback sample (samples/PaymentCallbacks): the naive endpoints against the
# bounded one under an open-loop load (fixed arrival rates of 50%, 90% and 150% of the workers' side-effect
# capacity) and a closed-loop load (wrk, C = 125 and 200), each row on a freshly started server with a bystander
# /ping probe in its own process; then the incident replay (too few workers, resize through the admin API) and the
# memory figures. Writes raw files, results.md and gnuplot PNGs to the results folder.
#
#   benchmarks/payment-callbacks.sh            full run (about 10 minutes)
#   benchmarks/payment-callbacks.sh --quick    every step, very short (well under a minute once built)
#   benchmarks/payment-callbacks.sh --slow     the 50 ms "slow dependency" instead of 1-5 ms
#   options: --out DIR (default benchmarks/results/payment-callbacks), --no-build
#
# Everything binds to 127.0.0.1, every step is bounded in time, and every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

QUICK=0; SLOW=0; BUILD=1; OUT="benchmarks/results/payment-callbacks"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --slow) SLOW=1 ;;
    --no-build) BUILD=0 ;;
    --out) OUT="$2"; shift ;;
    *) echo "Unknown option $1 (use --quick, --slow, --no-build, --out DIR)" >&2; exit 2 ;;
  esac
  shift
done

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
WORKERS=8; CAPACITY_QUEUE=2000; REPLAY_WORKERS=2; REPLAY_RESIZED=16
if [ "$SLOW" = 1 ]; then MIN_MS=50; MAX_MS=50; else MIN_MS=1; MAX_MS=5; fi
if [ "$QUICK" = 1 ]; then
  DUR=2; WARMUP=1; REPLAY_DUR=4; REPLAY_RESIZE_AT=1.5; MEM_ITEMS=1000; MEM_WORKERS=32
  OPEN_PERCENTS="150"; OPEN_ENDPOINTS="naive bounded"; CLOSED_CONNS="125"; CLOSED_ENDPOINTS="bounded"; CLOSED_BASELINE=0
else
  DUR=12; WARMUP=3; REPLAY_DUR=20; REPLAY_RESIZE_AT=6; MEM_ITEMS=20000; MEM_WORKERS=256
  OPEN_PERCENTS="50 90 150"; OPEN_ENDPOINTS="naive naive-sync bounded"; CLOSED_CONNS="125 200"; CLOSED_ENDPOINTS="naive naive-sync bounded"; CLOSED_BASELINE=1
fi
# The workers' side-effect capacity: workers / mean side-effect time (sleep overshoot and CPU part ~0.1 ms).
CAPACITY=$(awk -v w="$WORKERS" -v a="$MIN_MS" -v b="$MAX_MS" 'BEGIN { printf "%d", w * 1000 / ((a + b) / 2 + 0.1) }')

install_if_missing() { # command package
  command -v "$1" >/dev/null 2>&1 && return 0
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "== installing $2"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq "$2"
}
install_if_missing wrk wrk
install_if_missing gnuplot gnuplot-nox

APP="$ROOT/samples/PaymentCallbacks/bin/Release/net10.0/PaymentCallbacks.dll"
DRIVER="$ROOT/samples/PaymentCallbacks/LoadDriver/bin/Release/net10.0/PaymentCallbacks.LoadDriver.dll"
if [ "$BUILD" = 1 ]; then
  echo "== build (Release)"
  dotnet build -c Release -v q -nologo samples/PaymentCallbacks/PaymentCallbacks.csproj >/dev/null
  dotnet build -c Release -v q -nologo samples/PaymentCallbacks/LoadDriver/PaymentCallbacks.LoadDriver.csproj >/dev/null
fi

rm -rf "$OUT"; mkdir -p "$OUT/raw"
OUT=$(cd "$OUT" && pwd); RAW="$OUT/raw"
LUA="$RAW/post.lua"
cat > "$LUA" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
-- Each callback names one of 10 merchants in turn, as the open-loop driver's do: the server's tenants.
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, string.format('{"orderId":%d,"amount":12.5,"merchantId":"merchant-%d"}', n, n % 10))
end
LUA

# ---- process hygiene: every background process is recorded and stopped on exit, however the script ends ----
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

SERVER_PID=""; URL=""
start_server() { # dir, extra settings...
  local dir="$1"; shift
  dotnet "$APP" serve --port 0 --environment Development --ShutdownTimeoutSeconds 5 \
    --SideEffect:MinDelayMs "$MIN_MS" --SideEffect:MaxDelayMs "$MAX_MS" \
    --BoundedWork:Executors:payments:WorkerCount "$WORKERS" --BoundedWork:Executors:payments:QueueCapacity "$CAPACITY_QUEUE" \
    "$@" >"$dir/server.log" 2>&1 &
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

stop_server() { # dir: SIGTERM (graceful: the executor drains, then hands back what is left), then the ledger
  local dir="$1" i
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  for i in $(seq 1 200); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  sed -n 's/^LEDGER //p' "$dir/server.log" > "$dir/ledger.json"
}

run_row() { # shape name endpoint label load-description kind value
  local shape="$1" name="$2" endpoint="$3" label="$4" desc="$5" kind="$6" value="$7"
  local dir="$RAW/$shape/$name"; mkdir -p "$dir"
  printf 'label=%s\nendpoint=%s\nload=%s\n' "$label" "$endpoint" "$desc" > "$dir/row.txt"
  echo "== $shape: $label, $desc"
  start_server "$dir"
  driver open --url "$URL/ping" --rate 50 --duration 0.5 --drain 5 >/dev/null
  if [ "$endpoint" != none ]; then
    driver open --url "$URL/callbacks/$endpoint" --method POST --rate $((CAPACITY / 5)) --duration "$WARMUP" --drain 10 >/dev/null
  fi
  driver stats --base "$URL" --reset-peaks --out "$dir/before.json"
  driver open --url "$URL/ping" --rate 20 --duration "$DUR" --drain 10 --connections 16 --json "$dir/ping.json" --csv "$dir/ping.csv" >/dev/null &
  local ping_pid=$!; CHILDREN+=("$ping_pid")
  case "$kind" in
    none) sleep "$DUR"; driver stats --base "$URL" --out "$dir/after.json" ;;
    open) driver open --url "$URL/callbacks/$endpoint" --method POST --rate "$value" --duration "$DUR" --drain 10 \
            --stats-base "$URL" --stats-after "$dir/after.json" --json "$dir/load.json" >/dev/null ;;
    closed) timeout $((DUR + 60)) wrk -t2 -c"$value" -d"${DUR}s" --timeout 30s --latency -s "$LUA" "$URL/callbacks/$endpoint" > "$dir/wrk.txt"
            driver stats --base "$URL" --out "$dir/after.json" ;;
  esac
  wait "$ping_pid" || true
  stop_server "$dir"
}

{
  echo "date:      $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit:    $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "cpu:       $(nproc) x $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
  echo "memory:    $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "os:        $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
  echo ".NET:      $(dotnet --version) SDK; server GC and ThreadPool at their defaults"
  echo "load avg:  $(cut -d' ' -f1-3 /proc/loadavg) (at start)"
  echo "settings:  side effect ${MIN_MS}-${MAX_MS} ms blocking + ~20 SHA-256 hashes; bounded: $WORKERS workers, queue $CAPACITY_QUEUE, TryExecute + 503"
  echo "capacity:  $WORKERS workers / mean side effect = $CAPACITY side effects/s; rows of ${DUR} s after ${WARMUP} s warm-up; /ping 20/s"
  echo "command:   benchmarks/payment-callbacks.sh $([ "$QUICK" = 1 ] && echo --quick) $([ "$SLOW" = 1 ] && echo --slow)"
} > "$OUT/machine.txt"
cat "$OUT/machine.txt"

# ---- open loop ----
run_row open 00-none none "no callback load (/ping only)" "-" none 0
for pct in $OPEN_PERCENTS; do
  rate=$((CAPACITY * pct / 100))
  idx=0; for endpoint in $OPEN_ENDPOINTS; do
    idx=$((idx + 1)); run_row open "$(printf '%03d-%d' "$pct" "$idx")-$endpoint" "$endpoint" "$endpoint" "${pct}% ($rate/s)" open "$rate"
  done
done

# ---- closed loop ----
[ "$CLOSED_BASELINE" = 1 ] && run_row closed 000-none none "no callback load (/ping only)" "-" none 0
for conns in $CLOSED_CONNS; do
  idx=0; for endpoint in $CLOSED_ENDPOINTS; do
    idx=$((idx + 1)); run_row closed "$(printf '%03d-%d' "$conns" "$idx")-$endpoint" "$endpoint" "$endpoint" "C=$conns" closed "$conns"
  done
done

# ---- the incident, replayed ----
echo "== incident replay: $REPLAY_WORKERS workers, resize to $REPLAY_RESIZED at ${REPLAY_RESIZE_AT} s"
mkdir -p "$RAW/replay"
start_server "$RAW/replay" --BoundedWork:Executors:payments:WorkerCount "$REPLAY_WORKERS"
driver open --url "$URL/callbacks/bounded" --method POST --rate 100 --duration 0.5 --drain 5 >/dev/null
driver replay --base "$URL" --rate $((CAPACITY * 90 / 100)) --duration "$REPLAY_DUR" --resize-at "$REPLAY_RESIZE_AT" \
  --workers "$REPLAY_RESIZED" --json "$RAW/replay/replay.json" --csv "$RAW/replay/replay.csv" >/dev/null
stop_server "$RAW/replay"

# ---- memory ----
mkdir -p "$RAW/memory"
for flow in true false; do
  echo "== memory per queued item, FlowExecutionContext=$flow"
  start_server "$RAW/memory" --BoundedWork:Executors:payments:WorkerCount 1 \
    --BoundedWork:Executors:payments:QueueCapacity $((MEM_ITEMS + 100)) \
    --BoundedWork:Executors:payments:FlowExecutionContext "$flow" \
    --SideEffect:MinDelayMs 120000 --SideEffect:MaxDelayMs 120000
  driver memory-queued --base "$URL" --items "$MEM_ITEMS" --rate 4000 --out "$RAW/memory/queued-flow-$([ $flow = true ] && echo on || echo off).json" >/dev/null
  stop_server "$RAW/memory"
done
echo "== memory per idle worker"
start_server "$RAW/memory" --BoundedWork:Executors:payments:WorkerCount 1 --BoundedWork:Executors:payments:MaxWorkerCount 1024
driver memory-workers --base "$URL" --add "$MEM_WORKERS" --out "$RAW/memory/workers.json" >/dev/null
stop_server "$RAW/memory"

# ---- plots ----
cd "$OUT"
gnuplot <<GP
set terminal pngcairo size 1000,560 font ",10"
set datafile separator ","
set key top right
set y2range [0:$((REPLAY_RESIZED * 5 / 4))]
set grid
set output "replay.png"
set title "Incident replay: backlog and side effects/s, resize through the admin API"
set xlabel "seconds since the load started"
set ylabel "items / side effects per second"
set y2label "workers"
set y2tics
set ytics nomirror
plot "raw/replay/replay.csv" using 1:2 skip 1 with lines lw 2 title "queued (backlog)", \
     "" using 1:7 skip 1 with lines lw 2 title "side effects completed/s", \
     "" using 1:6 skip 1 axes x1y2 with steps lw 1 dt 2 title "busy workers", \
     "" using 1:5 skip 1 axes x1y2 with steps lw 1 title "workers"
GP
ping_series=""
for f in raw/open/150-*/ping.csv; do
  [ -f "$f" ] || continue
  name=$(basename "$(dirname "$f")" | sed 's/^150-[0-9]*-//')
  ping_series="$ping_series${ping_series:+, }\"$f\" using 1:2 skip 1 with points pt 7 ps 0.5 title \"/ping while $name runs at 150%\""
done
if [ -f raw/open/00-none/ping.csv ]; then
  ping_series="$ping_series${ping_series:+, }\"raw/open/00-none/ping.csv\" using 1:2 skip 1 with points pt 7 ps 0.5 title \"/ping, no callback load\""
fi
gnuplot <<GP
set terminal pngcairo size 1000,560 font ",10"
set datafile separator ","
set grid
set logscale y
set key top left
set output "bystander.png"
set title "Bystander /ping latency (from the intended send time), open loop at 150% of the workers' capacity"
set xlabel "seconds into the measured run"
set ylabel "latency (ms, log scale)"
plot $ping_series
GP
cd "$ROOT"

echo "== report"
driver report --results "$OUT"
echo "Results: $OUT/results.md, $OUT/replay.png, $OUT/bystander.png"
