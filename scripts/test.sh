#!/usr/bin/env bash
# The whole test suite. Some tests need programs of the machine: Chromium (the web interface),
# oathtool (2FA codes), strace (durability order), chattr and mount (the failing disk, as root),
# systemd-analyze, Caddy and nginx (the deploy recipes), python3-dotenv, dash and node (the export's
# readers). Missing ones are installed from Debian's packages when this runs as root with apt-get,
# without starting their services (and any the install started is stopped); whatever could not be
# installed is named here. Those tests are then skipped, saying why, or fail under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

# command -> Debian package (python3-dotenv, dash and node: the export's readers, issue 30)
declare -A PACKAGE=([chromium]=chromium [strace]=strace [chattr]=e2fsprogs [systemd-analyze]=systemd [caddy]=caddy [nginx]=nginx-light [python3-dotenv]=python3-dotenv [dash]=dash [node]=nodejs [oathtool]=oathtool)
present() {
  # python3-dotenv is a module of Debian's python3, not a command.
  if [ "$1" = python3-dotenv ]; then /usr/bin/python3 -c 'import dotenv' >/dev/null 2>&1; return; fi
  command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]
}
# The services the packages below could start (caddy, nginx), those running now, one a line.
services_running() {
  for service in caddy nginx; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then echo "$service"
    elif pgrep -x "$service" >/dev/null 2>&1; then echo "$service"
    fi
  done
}
missing=()
for command in "${!PACKAGE[@]}"; do
  present "$command" || missing+=("$command")
done

if [ ${#missing[@]} -gt 0 ]; then
  packages=()
  for command in "${missing[@]}"; do packages+=("${PACKAGE[$command]}"); done
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${packages[*]} (Debian packages) for the tests that need them..."
    # Installed, not started: Debian would start Caddy and nginx on port 80 (on a VPS, in front of
    # everything). policy-rc.d answering 101 tells the packages' scripts not to start services;
    # one already there is left alone. Whatever runs afterwards that did not before is stopped.
    before=$(services_running)
    own_policy=""
    # Debian reads /usr/sbin/policy-rc.d; SVC_POLICY_RC_D is for this script's own test only.
    policy=${SVC_POLICY_RC_D:-/usr/sbin/policy-rc.d}
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\n# svc-vault scripts/test.sh: install without starting services\nexit 101\n' >"$policy"
      chmod 755 "$policy"
      own_policy=1
      trap 'rm -f "$policy"' EXIT
    fi
    if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null); then
      echo "warning: apt-get could not install ${packages[*]}" >&2
    fi
    if [ -n "$own_policy" ]; then rm -f "$policy"; trap - EXIT; fi
    for service in $(services_running); do
      if ! grep -qx "$service" <<<"$before"; then
        echo "stopping $service, which the install started"
        systemctl stop "$service" 2>/dev/null || service "$service" stop 2>/dev/null || true
        systemctl disable "$service" 2>/dev/null || true
      fi
    done
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
