#!/usr/bin/env bash
# Throughput of BoundedExecutor against the raw channel (.NET) and Java's ThreadPoolExecutor, same shapes, item
# counts and method on both sides (see README.md, "Java ThreadPoolExecutor comparison"). Builds both, runs the
# Java harness, then the .NET one, and prints one markdown table on stdout (progress and raw lines go to stderr).
#
#   benchmarks/compare-java.sh            # 2,000,000 items/round, 3 warm-up + 7 measured rounds, 5 shapes
#   benchmarks/compare-java.sh --quick    # a few seconds: checks that everything runs, measures nothing
#   benchmarks/compare-java.sh --shapes 1/1,4/8 --items 5000000 --rounds 9
#
# Options (passed to both harnesses): --quick, --items N, --warmup K, --rounds R, --shapes P/W,P/W,...
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
dotnet build benchmarks/BoundedWork.Benchmarks/BoundedWork.Benchmarks.csproj -c Release --nologo -v quiet >&2

echo "== Java ThreadPoolExecutor" >&2
# shellcheck disable=SC2086 # JAVA_OPTS is a list of options
java ${JAVA_OPTS:-} -cp "$work/classes" TpeCompare "$@" > "$work/java.txt"
grep '^RESULT' "$work/java.txt" >&2 || true

echo "== .NET: BoundedExecutor and raw channel" >&2
dotnet run -c Release --no-build --project benchmarks/BoundedWork.Benchmarks -- compare "$@" --java "$work/java.txt" > "$work/dotnet.txt"
grep '^RESULT' "$work/dotnet.txt" >&2 || true

grep '^#' "$work/java.txt" || true
grep -v -e '^RESULT' "$work/dotnet.txt"
