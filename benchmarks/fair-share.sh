#!/usr/bin/env bash
# Fair share across tenants (see README.md, "Fair share"): 10 tenants at 150% of the executor's capacity, one sending
# 20x each of the others, against FIFO (fair share off) in the same run; shares against weights while every tenant is
# backlogged; and the cost per item with and without tenants. The same overload and shares for a typed queue (the
# tenant from TenantSelector; its refusals counted three ways, which must agree). Prints markdown on stdout (~80 s).
#
#   benchmarks/fair-share.sh                       # both targets, 10 s per overload run, items block 2 ms
#   benchmarks/fair-share.sh --target typed        # the typed queue only (executor: the executor only; both: default)
#   benchmarks/fair-share.sh --seconds 3           # shorter
#   benchmarks/fair-share.sh --item-ms 5           # slower items (capacity falls to match)
#   benchmarks/fair-share.sh --quick               # CI: 1 s runs, 100,000 items for the cost; checks every step runs
set -euo pipefail
cd "$(dirname "$0")/.."

dotnet build benchmarks/harnesses/FairShare -c Release --nologo -v quiet >&2
dotnet run -c Release --no-build --project benchmarks/harnesses/FairShare -- "$@"
