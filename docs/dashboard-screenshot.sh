#!/usr/bin/env bash
# Makes docs/dashboard.png again: the dashboard at 1280 px with five executors under live load, one adaptive with a
# few decisions and a pin, and a durable queue's cluster view (an in-memory cluster). The picture is taken by the
# test DocsScreenshotTests in tests/BoundedWork.AspNetCore.Tests (Debian's chromium, driven by Playwright, as the
# other browser tests are); this script runs that test and copies its picture here.
set -euo pipefail
cd "$(dirname "$0")/.."
project=tests/BoundedWork.AspNetCore.Tests
export BOUNDEDWORK_SCREENSHOT_LOAD_SECONDS="${BOUNDEDWORK_SCREENSHOT_LOAD_SECONDS:-75}" # the charts' history
dotnet test "$project" --filter "FullyQualifiedName~DocsScreenshotTests" --logger "console;verbosity=minimal"
picture=$(find "$project/bin" -path '*/artifacts/docs-dashboard.png' -newer "$0" -print -quit 2>/dev/null || true)
if [ -z "$picture" ]; then
  picture=$(ls -t "$project"/bin/*/*/artifacts/docs-dashboard.png | head -n 1)
fi
cp "$picture" docs/dashboard.png
echo "docs/dashboard.png: $(stat -c %s docs/dashboard.png) bytes, from $picture"
