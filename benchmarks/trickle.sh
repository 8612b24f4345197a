#!/usr/bin/env bash
# CPU time per item and wake-up latency when items trickle in at a fixed rate (see README.md, "Trickle: CPU per
# item at a fixed arrival rate"). Builds the harness (harnesses/Trickle) in Release, then runs one child process per contender and
# rate, and prints one markdown table on stdout (progress goes to stderr).
#
#   benchmarks/trickle.sh                 # 1k, 5k and 20k items/s; 1 s warm-up + 3 s measured per row (~80 s)
#   benchmarks/trickle.sh --quick         # ~8 s: checks that everything runs, measures nothing
#   benchmarks/trickle.sh --rates 2500 --seconds 10 --contenders executor-2,threadpool
#
# Options: --quick, --seconds S, --warmup S, --rates R,R,..., --contenders NAME,... (executor-2, executor-2-flow-off,
# executor-1, threadpool, channel-2, channel-1; the idle baseline always runs).
set -euo pipefail
cd "$(dirname "$0")/.."

dotnet build benchmarks/harnesses/Trickle -c Release --nologo -v quiet >&2
dotnet run -c Release --no-build --project benchmarks/harnesses/Trickle -- "$@"
