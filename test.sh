#!/usr/bin/env bash
# Runs the whole test suite from a fresh clone: installs what the tests need when it is missing, then runs
#
#   dotnet test BoundedWork.sln
#
# with any arguments passed on (./test.sh --filter FullyQualifiedName~Dashboard).
#
# Besides the .NET SDK (see global.json), the tests need two Debian packages:
#   chromium    /usr/bin/chromium: the dashboard's browser tests (tests/BoundedWork.AspNetCore.Tests) drive it through
#               Playwright (Playwright's own browser download is not used).
#   postgresql  PostgreSQL's server binaries (initdb and pg_ctl under /usr/lib/postgresql/*/bin, or in the folder
#               named by BOUNDEDWORK_PG_BIN): the durable queue's tests (tests/BoundedWork.PostgreSql.Tests) start a
#               throwaway server on a Unix socket. Run as root, they start it as the package's postgres user.
# The other test projects need only the SDK. Missing packages are installed with apt-get, through sudo when not root.
set -euo pipefail
cd "$(dirname "$0")"

export DOTNET_CLI_TELEMETRY_OPTOUT=1
export DOTNET_NOLOGO=1
export DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

if ! command -v dotnet >/dev/null 2>&1; then
  echo "test.sh: the .NET SDK is required (the version in global.json)." >&2
  exit 1
fi

missing=()
if [ ! -x /usr/bin/chromium ]; then
  missing+=(chromium)
fi
if [ -z "${BOUNDEDWORK_PG_BIN:-}" ] && ! compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null; then
  missing+=(postgresql)
elif [ "$(id -u)" -eq 0 ] && ! id -u postgres >/dev/null 2>&1; then
  missing+=(postgresql) # the package creates the postgres user the server runs as
fi

if [ "${#missing[@]}" -gt 0 ]; then
  echo "== test.sh: installing ${missing[*]} with apt-get" >&2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: the tests need ${missing[*]} and apt-get is not available. Install Chromium at /usr/bin/chromium" >&2
    echo "and PostgreSQL's server binaries (or set BOUNDEDWORK_PG_BIN to their folder), then run dotnet test BoundedWork.sln." >&2
    exit 1
  fi

  as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "test.sh: installing ${missing[*]} needs root or sudo." >&2
      exit 1
    fi
    as_root=(sudo)
  fi

  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi

echo "== dotnet test BoundedWork.sln $*" >&2
exec dotnet test BoundedWork.sln "$@"
