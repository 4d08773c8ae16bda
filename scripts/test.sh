#!/usr/bin/env bash
# The whole test suite, on both stores: every test on the file store, and the API, account, auth,
# audit, vault, lifecycle and robustness suites (POSTGRES_SUITES) a second time on PostgreSQL, in a
# throwaway cluster this script starts on a Unix socket and removes on exit (issue 34). The two
# passes run at once (most of a test's time is waiting on servers, Chromium and disks); both must
# pass. Arguments (files, folders, bun test flags) go to both passes instead of the default lists.
# SVC_TEST_STORE=file or =postgres runs one pass only; SVC_TEST_POSTGRES set to a running cluster's
# URL is used instead of a throwaway one.
#
# Some tests need programs of the machine: Chromium (the web interface), oathtool (2FA codes),
# strace (durability order), chattr and mount (the failing disk, as root), systemd-analyze, Caddy and
# nginx (the deploy recipes), python3-dotenv, dash and node (the export's readers), PostgreSQL's
# server (the second pass). Missing ones are installed from Debian's packages when this runs as root
# with apt-get, without starting their services (and any the install started is stopped); whatever
# could not be installed is named here. Those tests are then skipped, saying why, or fail under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

# The suites of the second pass (docs/development.md, "Tests"): everything a server answers through
# its store. Not e2e/ and cli/ (the same API through a browser or the svc command), store/ (the
# file formats), nor the rest of platform/ (configuration, start-up, deploy files): only its API
# files are listed, the canaries (no plaintext in any row), the throttles and the moved ciphertexts.
POSTGRES_SUITES=(test/modules test/account test/auth test/audit test/vaults test/robustness
  test/platform/access-keys.test.ts test/platform/auth.test.ts test/platform/errors.test.ts test/platform/signup.test.ts
  test/platform/canary.test.ts test/platform/throttle.test.ts test/platform/ciphertext.test.ts)
STORES=${SVC_TEST_STORE:-both}
case "$STORES" in file | postgres | both) ;; *)
  echo "SVC_TEST_STORE must be file or postgres (unset: both), not '$STORES'" >&2
  exit 2
  ;;
esac
want_postgres() { [ "$STORES" != file ]; }
# A throwaway cluster is started unless one is given.
own_cluster() { want_postgres && [ -z "${SVC_TEST_POSTGRES:-}" ]; }
# Debian keeps PostgreSQL's programs out of PATH, one folder per major version: the newest.
# (SVC_POSTGRESQL_LIB is for this script's own test only.)
pg_bin() {
  local dir found=""
  for dir in "${SVC_POSTGRESQL_LIB:-/usr/lib/postgresql}"/*/bin; do [ -x "$dir/initdb" ] && found=$dir; done
  [ -n "$found" ] && echo "$found"
}

# command -> Debian package (python3-dotenv, dash and node: the export's readers, issue 30)
declare -A PACKAGE=([chromium]=chromium [strace]=strace [chattr]=e2fsprogs [systemd-analyze]=systemd [caddy]=caddy [nginx]=nginx-light [python3-dotenv]=python3-dotenv [dash]=dash [node]=nodejs [oathtool]=oathtool)
own_cluster && PACKAGE[initdb]=postgresql
present() {
  # python3-dotenv is a module of Debian's python3, not a command.
  if [ "$1" = python3-dotenv ]; then /usr/bin/python3 -c 'import dotenv' >/dev/null 2>&1; return; fi
  if [ "$1" = initdb ]; then pg_bin >/dev/null; return; fi
  command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]
}
# The services the packages below could start (caddy, nginx, Debian's own PostgreSQL cluster),
# those running now, one a line.
services_running() {
  for service in caddy nginx postgresql; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then echo "$service"
    elif [ "$service" = postgresql ]; then
      # Any cluster counts as "was running": only one the install started is stopped.
      if pgrep -x postgres >/dev/null 2>&1; then echo "$service"; fi
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

# The second pass's cluster: initdb into a temporary folder, the server on a socket there only
# (no TCP port: listen_addresses=''), fsync on as in production, connections for the servers of
# the tests at once. PostgreSQL refuses to run as root: as root it runs as the `postgres` user
# Debian's package creates.
cluster=""
pg_as() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
stop_cluster() {
  [ -n "$cluster" ] || return 0
  pg_as "$PG_BIN/pg_ctl" -D "$cluster/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$cluster"
  cluster=""
}
start_cluster() {
  PG_BIN=$(pg_bin) || return 1
  cluster=$(mktemp -d "${TMPDIR:-/tmp}/svc-vault-pg.XXXXXX")
  chmod 755 "$cluster"
  if [ "$(id -u)" = "0" ]; then chown postgres "$cluster" || return 1; fi
  pg_as "$PG_BIN/initdb" -D "$cluster/data" -A trust -U postgres -E UTF8 --locale=C --no-sync >"$cluster/initdb.log" 2>&1 || {
    cat "$cluster/initdb.log" >&2
    return 1
  }
  pg_as "$PG_BIN/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w -t 30 \
    -o "-c listen_addresses='' -c unix_socket_directories='$cluster' -c max_connections=500 -c fsync=on" start >/dev/null || {
    cat "$cluster/server.log" >&2
    return 1
  }
  export SVC_TEST_POSTGRES="postgres://postgres@localhost/postgres?host=$cluster"
  # Removed whole on exit: the tests need not drop the databases they made in it.
  export SVC_TEST_POSTGRES_THROWAWAY=1
}

pids=()
# On any exit (a failure, Ctrl-C, a CI runner's TERM): the passes end and the cluster goes.
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  stop_cluster
  [ -z "${pg_log:-}" ] || rm -f "$pg_log"
  [ -z "${file_log:-}" ] || rm -f "$file_log"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if own_cluster; then
  if ! start_cluster; then
    stop_cluster
    if [ "$STORES" = postgres ] || [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
      echo "error: no PostgreSQL cluster could be started for the PostgreSQL pass" >&2
      exit 1
    fi
    echo "warning: no PostgreSQL cluster could be started (package postgresql): the PostgreSQL pass is skipped (under CI=true it fails)" >&2
    STORES=file
  fi
fi

# Each pass runs in the background, as `name &` (a subshell that becomes bun test: $! is its pid),
# so that a signal to this script is handled at once, not after a pass. The file store's pass
# never inherits SVC_TEST_STORE; both get SVC_TEST_POSTGRES, for the tests of the database itself
# (two instances, migrations), which run in the file store's pass.
file_pass() {
  unset SVC_TEST_STORE
  exec bun test --timeout 60000 "$@"
}
# The PostgreSQL pass runs at a lower priority: the file store's pass, the longer one, has the
# tests with time budgets (parsers, throttles, Chromium); the second pass takes the idle CPU.
postgres_pass() {
  if [ $# -gt 0 ]; then SVC_TEST_STORE=postgres exec nice -n 10 bun test --timeout 60000 "$@"; fi
  # A file that starts no server (parsers, rules) does the same on both stores: once is enough.
  local files
  mapfile -t files < <(grep -rlE --include='*.test.ts' 'startTestServer|spawnServer|openVault|signUp' "${POSTGRES_SUITES[@]}" | sort | sed 's|^|./|')
  SVC_TEST_STORE=postgres exec nice -n 10 bun test --timeout 60000 "${files[@]}"
}
finish() {
  local status=0
  wait "$1" || status=$?
  pids=()
  return "$status"
}

if [ "$STORES" = file ]; then
  file_pass "$@" &
  pids+=($!)
  finish $!
  exit
fi
if [ "$STORES" = postgres ]; then
  postgres_pass "$@" &
  pids+=($!)
  finish $!
  exit
fi

# Both passes at once: the file store's output as it comes, PostgreSQL's after it (one block).
# The file store's is kept too, so that the last lines name what failed in either pass (a CI log
# is often read from its tail only, which is the PostgreSQL pass).
pg_log=$(mktemp "${TMPDIR:-/tmp}/svc-vault-pg-pass.XXXXXX")
file_log=$(mktemp "${TMPDIR:-/tmp}/svc-vault-file-pass.XXXXXX")
started=$SECONDS
postgres_pass "$@" >"$pg_log" 2>&1 &
pg_pid=$!
file_pass "$@" > >(tee "$file_log") 2>&1 &
file_pid=$!
pids+=("$pg_pid" "$file_pid")
file_status=0
wait "$file_pid" || file_status=$?
file_seconds=$((SECONDS - started))
pg_status=0
wait "$pg_pid" || pg_status=$?
pg_seconds=$((SECONDS - started))
pids=()
echo
echo "==================== the same suites on PostgreSQL (SVC_TEST_STORE=postgres) ===================="
cat "$pg_log"
echo
# The failing tests of each pass (bun test marks them "(fail)"), each with its file and the first
# error line printed before it (a hook that failed is "(unnamed)": only its file says which), and
# errors between tests, which fail a pass without a "(fail)" line.
failures() {
  awk '
    / tests? failed:$/ { recap = 1 }   # bun test names the failures again at the end: once is enough
    recap { next }
    /^[^ (#].*\.test\.[cm]?[jt]sx?:$/ { file = substr($0, 1, length($0) - 1); err = ""; between = 0; next }
    /^\((pass|skip|todo)\)/ { err = ""; next }
    /^# Unhandled error between tests/ { between = 1; err = ""; next }
    /^(error|[A-Za-z]*Error)(:| )/ && err == "" {
      err = substr($0, 1, 200)
      if (between) { print "  " file ": an error between tests"; print "    " err; between = 0 }
      next
    }
    /^\(fail\)/ && !seen[file $0]++ {
      print "  " file ": " $0
      if (err != "") print "    " err
      err = ""
    }
  ' "$1"
}
for pass in file PostgreSQL; do
  log=$file_log
  [ "$pass" = PostgreSQL ] && log=$pg_log
  found=$(failures "$log")
  if [ -n "$found" ]; then
    echo "failed on the $pass store:"
    echo "$found"
  fi
done
echo "file store: exit $file_status after ${file_seconds} s; PostgreSQL: exit $pg_status after ${pg_seconds} s"
[ "$file_status" = 0 ] && [ "$pg_status" = 0 ]
