#!/usr/bin/env bash
# Install everything `make install` puts next to the binaries:
#
#   scripts/install-data.sh DESTDIR PREFIX
#
#   PREFIX/share/agenttest/{sql,static,nginx}   migrations, dashboard, nginx templates
#   PREFIX/share/agenttest/{host,zygote}        the sandboxed strategy host
#   PREFIX/share/doc/agenttest/                 README and docs/
#   PREFIX/lib/python3*/dist-packages/          the Python SDK (agenttest, model_iteration_tool, ...)
#   PREFIX/lib/agenttest/libagenttest_eval.so   its C library
#   PREFIX/lib/systemd/system/                  agenttest-fcgi.service (+ runner when built)
#   PREFIX/lib/sysusers.d/, PREFIX/lib/tmpfiles.d/   the agenttest user and directories
#   /etc/agenttest/agenttest.conf               example configuration (never overwritten)
#   /etc/nginx/sites-available/agenttest.conf   the nginx site, rendered from nginx/
#
# Everything lands under DESTDIR (empty for a real install; packagers set it).
# Files under /etc that already exist are left alone: the new version goes
# next to them as *.new and the script says so. The nginx site is rendered
# with the values of these variables (defaults in brackets):
# AGENTTEST_NGINX_LISTEN [80], AGENTTEST_SERVER_NAME [_],
# MANTIS_RATE_LIMIT_RPM [120], AGENTTEST_RATE_BURST [rpm/2],
# AGENTTEST_BODY_LIMIT [1048576]. docs/deployment.md walks through the rest.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 DESTDIR PREFIX" >&2; exit 2; }
DESTDIR=$1
PREFIX=$2
REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
case $PREFIX in /*) ;; *) echo "install-data: PREFIX must be absolute: $PREFIX" >&2; exit 2 ;; esac

BINDIR=$PREFIX/bin
DATADIR=$PREFIX/share/agenttest
DOCDIR=$PREFIX/share/doc/agenttest
LIBDIR=$PREFIX/lib
[ "$PREFIX" = /usr ] || [ "$PREFIX" = /usr/local ] ||
  echo "install-data: note: systemd looks for units under /usr/lib, /usr/local/lib and /etc only" >&2

# copy_tree SRC DST: SRC's files (not dotfiles) into DST, 0644 files, 0755 dirs.
copy_tree() {
  local src=$1 dst=$2 f
  [ -d "$src" ] || return 0
  while IFS= read -r -d '' f; do
    install -D -m 0644 "$src/$f" "$dst/$f"
  done < <(cd "$src" && find . -type f -not -path '*/.*' -not -path '*/__pycache__/*' -printf '%P\0')
}

# install_conf SRC DST MODE: install unless DST exists, else DST.new.
install_conf() {
  local src=$1 dst=$2 mode=$3
  if [ -e "$dst" ]; then
    install -D -m "$mode" "$src" "$dst.new"
    echo "install-data: kept $dst; the new version is $dst.new"
  else
    install -D -m "$mode" "$src" "$dst"
  fi
}

# render_unit SRC DST: a unit template with the install paths filled in.
render_unit() {
  sed -e "s|@BINDIR@|$BINDIR|g" -e "s|@DATADIR@|$DATADIR|g" -e "s|@DOCDIR@|$DOCDIR|g" "$1" >"$2"
  chmod 0644 "$2"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Data: migrations, dashboard, nginx templates and their renderer.
copy_tree "$REPO/sql" "$DESTDIR$DATADIR/sql"
copy_tree "$REPO/static" "$DESTDIR$DATADIR/static"
copy_tree "$REPO/nginx" "$DESTDIR$DATADIR/nginx"
# The strategy host (Python) and the zygote files the sandbox looks for in
# <prefix>/share/agenttest/ (sandbox/hostdir.c, sandbox/zygote_sup.c).
copy_tree "$REPO/sandbox/host" "$DESTDIR$DATADIR/host"
copy_tree "$REPO/sandbox/zygote" "$DESTDIR$DATADIR/zygote"
chmod 0755 "$DESTDIR$DATADIR/nginx/render.py"

# Documentation.
install -D -m 0644 "$REPO/README.md" "$DESTDIR$DOCDIR/README.md"
copy_tree "$REPO/docs" "$DESTDIR$DOCDIR"

# The Python SDK (agenttest, model_iteration_tool, mantis_model_iteration_tool)
# where Debian's /usr/bin/python3 finds it, and its C library beside it:
# PREFIX/lib/python3/dist-packages for /usr, PREFIX/lib/python3.X/dist-packages
# otherwise (on Debian's path for /usr/local); PREFIX/lib/agenttest/libagenttest_eval.so
# (the SDK looks there, relative to where it is installed).
if [ "$PREFIX" = /usr ]; then
  PYDIR=$PREFIX/lib/python3/dist-packages
else
  PYDIR=$PREFIX/lib/$("$PYTHON" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')/dist-packages
fi
for pkg in agenttest model_iteration_tool mantis_model_iteration_tool; do
  copy_tree "$REPO/sandbox/host/$pkg" "$DESTDIR$PYDIR/$pkg"
done
SOLIB=${AGENTTEST_EVAL_LIB:-$REPO/build/release/libagenttest_eval.so}
[ -f "$SOLIB" ] || { echo "install-data: $SOLIB missing (make build)" >&2; exit 1; }
install -D -m 0644 "$SOLIB" "$DESTDIR$LIBDIR/agenttest/libagenttest_eval.so"
case $PREFIX in /usr|/usr/local) ;; *)
  echo "install-data: note: put $PYDIR on PYTHONPATH to use the SDK" >&2 ;; esac

# systemd: units, the system user, its directories.
install -d "$DESTDIR$LIBDIR/systemd/system" "$DESTDIR$LIBDIR/sysusers.d" "$DESTDIR$LIBDIR/tmpfiles.d"
render_unit "$REPO/systemd/agenttest-fcgi.service.in" "$DESTDIR$LIBDIR/systemd/system/agenttest-fcgi.service"
if [ -x "$DESTDIR$BINDIR/agenttest-runner" ]; then
  render_unit "$REPO/systemd/agenttest-runner.service.in" "$DESTDIR$LIBDIR/systemd/system/agenttest-runner.service"
  # the market-data refresh (docs/market-data.md): queues prefetch jobs for the runner
  render_unit "$REPO/systemd/agenttest-prefetch.service.in" "$DESTDIR$LIBDIR/systemd/system/agenttest-prefetch.service"
  install -m 0644 "$REPO/systemd/agenttest-prefetch.timer" "$DESTDIR$LIBDIR/systemd/system/agenttest-prefetch.timer"
fi
install -m 0644 "$REPO/systemd/agenttest.sysusers" "$DESTDIR$LIBDIR/sysusers.d/agenttest.conf"
install -m 0644 "$REPO/systemd/agenttest.tmpfiles" "$DESTDIR$LIBDIR/tmpfiles.d/agenttest.conf"

# /etc: example configuration and the nginx site.
install_conf "$REPO/systemd/agenttest.conf.example" "$DESTDIR/etc/agenttest/agenttest.conf" 0640

rpm=${MANTIS_RATE_LIMIT_RPM:-120}
burst=${AGENTTEST_RATE_BURST:-$((rpm / 2 > 0 ? rpm / 2 : 1))}
body=${AGENTTEST_BODY_LIMIT:-1048576}
for v in "$rpm" "$burst" "$body"; do
  [[ $v =~ ^[0-9]{1,10}$ ]] || { echo "install-data: not a number: $v" >&2; exit 2; }
done
retry=1
[ "$rpm" -gt 0 ] && retry=$(((60 + rpm - 1) / rpm))
"$PYTHON" "$REPO/nginx/render.py" "$REPO/nginx/agenttest-site.conf.in" \
  "LISTEN=${AGENTTEST_NGINX_LISTEN:-80}" "SERVER_NAME=${AGENTTEST_SERVER_NAME:-_}" \
  "ACCESS_LOG=/var/log/nginx/agenttest.access.log agenttest_json buffer=64k flush=5s" \
  "FCGI_SOCKET=/run/agenttest/fcgi.sock" "STATIC_ROOT=$DATADIR/static" \
  "BODY_LIMIT=$body" "CLIENT_MAX_BODY=$((body + 65536))" \
  "RATE_RPM=$rpm" "RATE_BURST=$burst" "RETRY_AFTER=$retry" \
  "UPSTREAM_KEEPALIVE=0" "ALLOWED_HOSTS=${AGENTTEST_ALLOWED_HOSTS:-localhost,127.0.0.1,[::1]}" >"$tmp/agenttest.conf"
install_conf "$tmp/agenttest.conf" "$DESTDIR/etc/nginx/sites-available/agenttest.conf" 0644

echo "install-data: installed under ${DESTDIR:-/}; next steps: docs/deployment.md"
