#!/usr/bin/env bash
# Install every Debian package agenttest needs to build, run and test.
# Idempotent and quick: when all packages are present it only asks dpkg.
set -euo pipefail

PACKAGES=(
  # build
  gcc make pkg-config clang llvm libclang-rt-14-dev cppcheck valgrind mandoc
  libfcgi-dev libfcgi-bin libsodium-dev libjson-c-dev libmariadb-dev
  libseccomp-dev libcmocka-dev libcurl4-openssl-dev
  # services of the stack
  mariadb-server mariadb-client nginx-light
  # strategy host (runs inside the sandbox)
  python3 python3-numpy python3-pandas python3-scipy python3-sklearn
  # tests and benchmarks
  python3-pytest python3-pytest-xdist python3-requests wrk bubblewrap hyperfine curl procps iproute2
  chromium nodejs
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# npm: Debian's nodejs needs the separate npm package, while a nodejs that
# bundles npm (NodeSource's, on these machines) conflicts with it.
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing packages: ${missing[*]} (run as root or install them)" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Front-end libraries for the dashboard and its browser tests, pinned by the
# lock file; skipped when node_modules matches the lock already.
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$here/package-lock.json" ]; then
  stamp="$here/node_modules/.deps-stamp"
  if [ ! -f "$stamp" ] || [ "$here/package-lock.json" -nt "$stamp" ] ||
     [ ! -f "$here/static/vendor/uPlot.iife.min.js" ] || [ ! -f "$here/static/vendor/codemirror.js" ]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
    touch "$stamp"
  fi
fi
