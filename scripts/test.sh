#!/usr/bin/env bash
# The whole test suite. Browser tests need Debian's Chromium; the deploy tests systemd-analyze,
# Caddy and nginx: installed here when missing (as root). Under CI=true a tool that cannot be
# installed fails its tests instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
command -v caddy >/dev/null 2>&1 || missing+=(caddy)
{ command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; } || missing+=(nginx-light)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} for the browser and deploy tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) || echo "warning: ${missing[*]} could not be installed"
fi
exec bun test --timeout 60000 "$@"
