#!/usr/bin/env bash
# The whole test suite. Some tests need programs of the machine: Chromium (the web interface),
# strace (durability order), chattr and mount (the failing disk, as root), systemd-analyze, Caddy
# and nginx (the deploy recipes), oathtool (2FA codes are held to it). Missing ones are installed
# from Debian's packages when this runs as root with apt-get; whatever could not be installed is
# named here. Those tests are then skipped, saying why, or fail under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

# command -> Debian package
declare -A PACKAGE=([chromium]=chromium [strace]=strace [chattr]=e2fsprogs [systemd-analyze]=systemd [caddy]=caddy [nginx]=nginx-light [oathtool]=oathtool)
present() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
missing=()
for command in "${!PACKAGE[@]}"; do
  present "$command" || missing+=("$command")
done

if [ ${#missing[@]} -gt 0 ]; then
  packages=()
  for command in "${missing[@]}"; do packages+=("${PACKAGE[$command]}"); done
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${packages[*]} (Debian packages) for the tests that need them..."
    if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null); then
      echo "warning: apt-get could not install ${packages[*]}" >&2
    fi
  else
    echo "warning: not root with apt-get, so ${packages[*]} cannot be installed here" >&2
  fi
  still=()
  for command in "${missing[@]}"; do
    present "$command" || still+=("$command (package ${PACKAGE[$command]})")
  done
  if [ ${#still[@]} -gt 0 ]; then
    echo "NOT INSTALLED: ${still[*]}; the tests that need them are skipped, or fail under CI=true" >&2
  fi
fi

if [ "$(id -u)" != "0" ]; then
  echo "note: not root: the full-disk test (a tmpfs mount) is skipped, or fails under CI=true" >&2
fi

exec bun test --timeout 60000 "$@"
