#!/usr/bin/env bash
# Fair share across tenants (see README.md, "Fair share"): 10 tenants at 150% of the executor's capacity, one sending
# 20x each of the others, against the FIFO executor in the same run; shares against weights while every tenant is
# backlogged; and the cost per item with and without tenants. Prints markdown on stdout (~40 s).
#
#   benchmarks/fair-share.sh                       # 10 s per overload run, items block 2 ms
#   benchmarks/fair-share.sh --seconds 3           # shorter
#   benchmarks/fair-share.sh --item-ms 5           # slower items (capacity falls to match)
set -euo pipefail
cd "$(dirname "$0")/.."

dotnet build benchmarks/harnesses/FairShare -c Release --nologo -v quiet >&2
dotnet run -c Release --no-build --project benchmarks/harnesses/FairShare -- "$@"
