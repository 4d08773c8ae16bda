#!/usr/bin/env bash
# The whole test suite. Browser tests need Debian's Chromium: installed here when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium for the browser tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "warning: chromium could not be installed"
fi
exec bun test --timeout 60000 "$@"
