#!/usr/bin/env bash
# Throughput of BoundedExecutor (its default configuration, the ExecutionContext flowing to each item, and with the
# flow off) against the raw channel (.NET) and Java's ThreadPoolExecutor, same shapes, items (one increment of a
# shared counter), item counts and method on both sides (see README.md, "Java ThreadPoolExecutor comparison").
# Builds both, runs the Java harness, then the .NET one (harnesses/Compare), and prints one markdown table on stdout (progress and raw
# lines go to stderr).
#
#   benchmarks/compare-java.sh            # 2,000,000 items/round, 3 warm-up + 7 measured rounds, 5 shapes
#   benchmarks/compare-java.sh --quick    # a few seconds: checks that everything runs, measures nothing
#   benchmarks/compare-java.sh --shapes 1/1,4/8 --items 5000000 --rounds 9
#   benchmarks/compare-java.sh --processes 5   # 5 Java and 5 .NET processes, alternating; the table aggregates them
#
#   benchmarks/compare-java.sh --item empty     # no-op items: the hand-off alone
#
# Options (passed to both harnesses): --quick, --items N, --warmup K, --rounds R, --shapes P/W,P/W,...,
# --item counter|empty (default counter)
# --processes N (this script's own, default 1) runs each harness N times, Java and .NET alternating, and reports the
# median of the processes' medians, with BoundedExecutor's median in each process in a last column.
# JAVA_OPTS adds JVM options (default: none, so the JVM's defaults).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in java javac dotnet; do
  command -v "$tool" >/dev/null 2>&1 || { echo "compare-java.sh needs '$tool' on the PATH." >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== build (javac, dotnet -c Release)" >&2
javac -Xlint:all -Werror -d "$work/classes" benchmarks/java/TpeCompare.java
dotnet build benchmarks/harnesses/Compare -c Release --nologo -v quiet >&2

processes=1
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --processes)
      [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "--processes needs a whole number of at least 1." >&2; exit 2; }
      processes="$2"
      shift 2
      ;;
    *)
      args+=("$1")
      shift
      ;;
  esac
done

: > "$work/java.txt"
: > "$work/dotnet.txt"
for ((run = 1; run <= processes; run++)); do
  echo "== Java ThreadPoolExecutor (process $run of $processes)" >&2
  # shellcheck disable=SC2086 # JAVA_OPTS is a list of options
  java ${JAVA_OPTS:-} -cp "$work/classes" TpeCompare "${args[@]}" > "$work/java-run.txt"
  grep '^RESULT' "$work/java-run.txt" | tee -a "$work/java.txt" >&2 || true

  echo "== .NET: BoundedExecutor and raw channel (process $run of $processes)" >&2
  dotnet run -c Release --no-build --project benchmarks/harnesses/Compare -- "${args[@]}" > "$work/dotnet-run.txt"
  grep '^RESULT' "$work/dotnet-run.txt" | tee -a "$work/dotnet.txt" >&2 || true
done

grep '^#' "$work/java-run.txt" || true
grep '^#' "$work/dotnet-run.txt" || true
dotnet run -c Release --no-build --project benchmarks/harnesses/Compare -- --report "$work/dotnet.txt" --java "$work/java.txt"
