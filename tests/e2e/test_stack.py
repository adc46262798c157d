"""scripts/stack.sh and make start/stop/status behaviour."""

import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import REPO, Stack


def test_make_start_runs_stack_start():
    r = subprocess.run(["make", "-n", "--no-print-directory", "start"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "scripts/stack.sh start" in r.stdout, r.stdout


def test_start_twice_says_already_running(stack):
    # What `make start` runs after deps and build (the test above).
    master = stack.pid("pool")
    r = stack.stack_sh("start")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "already running" in r.stdout, r.stdout
    assert stack.url in r.stdout
    assert stack.pid("pool") == master
    assert stack.get("/health").status == 200


def test_status_reports_running(stack):
    r = stack.stack_sh("status")
    assert r.returncode == 0, r.stdout
    for c in ("mariadb", "pool", "nginx", "runner"):
        assert re.search(rf"^{c} +running \(pid \d+\)$", r.stdout, re.M), r.stdout
    assert stack.url in r.stdout


def test_stack_env(stack):
    env = stack.read_env()
    assert env["AGENTTEST_URL"] == f"http://127.0.0.1:{stack.port}"
    assert "AGENTTEST_TOKEN" not in env  # no MANTIS_AUTH_TOKEN on this stack
    assert env["DATABASE_URL"].startswith("mariadb://")


def test_secret_key_private(stack):
    key = stack.var / "secret.key"
    assert key.exists()
    assert key.stat().st_mode & 0o077 == 0


def test_mariadb_has_no_tcp_listener(stack):
    pid = stack.pid("mariadb")
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                cols = line.split()
                if cols[3] == "0A":  # LISTEN
                    assert cols[9] not in inodes, f"MariaDB listens on TCP: {line}"


def refused(**env):
    """Try to start a stack with ENV; return (start result, pid files left)."""
    s = Stack("refused", env)
    s.settings.update({k: str(v) for k, v in env.items()})
    try:
        r = s.stack_sh("start", timeout=60)
        status = sorted(p.name for p in (s.var / "run").glob("*.pid"))
    finally:
        s.stack_sh("stop")
        shutil.rmtree(s.var, ignore_errors=True)
    return r, status


def test_refuses_public_host_without_token():
    r, status = refused(MANTIS_HOST="0.0.0.0")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "refusing to start" in r.stderr
    assert status == [], status  # nothing was started


def test_refuses_weak_auth_token():
    r, status = refused(MANTIS_AUTH_TOKEN="password123")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "refusing to start" in r.stderr
    assert status == [], status


def test_refuses_invalid_stack_settings():
    for key, value in (("MANTIS_PORT", "99999"), ("MANTIS_RATE_LIMIT_RPM", "-5"),
                       ("MANTIS_HOST", "127.0.0.1;evil")):
        r, status = refused(**{key: value})
        assert r.returncode == 1, (key, r.stdout, r.stderr)
        assert key in r.stderr, r.stderr
        assert status == [], status


def test_run_foreground_stops_everything_on_ctrl_c():
    s = Stack("run")
    proc = subprocess.Popen([str(REPO / "scripts" / "stack.sh"), "run"], env=s.base_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "is up at" in line or proc.poll() is not None:
                break
        assert any(f"http://127.0.0.1:{s.port}" in l for l in lines), lines
        s.info = s.read_env()
        assert s.get("/health").status == 200
        pids = {c: s.pid(c) for c in ("mariadb", "pool", "nginx")}
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=90)
        assert proc.returncode == 130, rest
        for c, pid in pids.items():
            assert not os.path.exists(f"/proc/{pid}") or \
                open(f"/proc/{pid}/stat").read().split()[2] == "Z", f"{c} still runs"
        assert not (s.var / "stack.env").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
        s.started = True
        s.stop()


def test_install_renders_a_valid_production_site(tmp_path):
    dest = tmp_path / "dest"
    r = subprocess.run([str(REPO / "scripts" / "install-data.sh"), str(dest), "/usr/local"],
                       env={**os.environ, "AGENTTEST_NGINX_LISTEN": "127.0.0.1:1"},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    unit = (dest / "usr/local/lib/systemd/system/agenttest-fcgi.service").read_text()
    assert "@" not in unit.replace("@system-service", "").replace("@privileged", "").replace("@resources", "")
    assert "ExecStart=/usr/local/bin/agenttest-fcgi" in unit
    assert (dest / "etc/agenttest/agenttest.conf").stat().st_mode & 0o077 == 0o040
    site = dest / "etc/nginx/sites-available/agenttest.conf"
    text = site.read_text()
    assert "fastcgi_pass agenttest_pool" in text and "unix:/run/agenttest/fcgi.sock" in text
    assert "limit_req zone=agenttest_perip burst=60 nodelay" in text
    # The site must load inside an http block (as Debian's nginx.conf includes it).
    t = tmp_path / "t"
    t.mkdir()
    main = t / "nginx.conf"
    main.write_text(
        f"pid {t}/nginx.pid;\nerror_log stderr;\nevents {{}}\nhttp {{\n"
        f"client_body_temp_path {t}/b; fastcgi_temp_path {t}/f; proxy_temp_path {t}/p;\n"
        f"scgi_temp_path {t}/s; uwsgi_temp_path {t}/u;\ninclude {site};\n}}\n")
    r = subprocess.run(["nginx", "-t", "-q", "-p", str(t), "-c", str(main), "-e", "stderr"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    # A second install keeps edited files and writes .new next to them.
    site.write_text(text + "# edited\n")
    r = subprocess.run([str(REPO / "scripts" / "install-data.sh"), str(dest), "/usr/local"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert site.read_text().endswith("# edited\n")
    assert (site.parent / "agenttest.conf.new").exists()


def test_install_renders_valid_prefetch_timer_and_service(tmp_path):
    """The hourly market-data refresh (docs/market-data.md): install-data.sh
    installs agenttest-prefetch.{service,timer} next to the runner, and
    systemd itself accepts both (systemd-analyze verify: the timer's
    calendar, its unit, the service's ExecStart an executable)."""
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    dest, prefix = tmp_path / "dest", tmp_path / "prefix"
    bindir = dest / str(prefix).lstrip("/") / "bin"
    bindir.mkdir(parents=True)
    for b in ("agenttest", "agenttest-runner"):
        shutil.copy2(REPO / "bin" / b, bindir / b)
    r = subprocess.run([str(REPO / "scripts" / "install-data.sh"), str(dest), str(prefix)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    prefix.symlink_to(dest / str(prefix).lstrip("/"))  # the unit's paths resolve as after a real install
    units = prefix / "lib" / "systemd" / "system"
    service = (units / "agenttest-prefetch.service").read_text()
    assert "ExecStart=%s/bin/agenttest data prefetch\n" % prefix in service
    assert "@" not in service
    timer = (units / "agenttest-prefetch.timer").read_text()
    assert "Unit=agenttest-prefetch.service\n" in timer and "OnCalendar=" in timer
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(units / "agenttest-prefetch.timer"),
                        str(units / "agenttest-prefetch.service")],
                       cwd=str(units), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "prefetch" not in r.stderr, r.stderr


def test_renderer_refuses_directive_injection(tmp_path):
    r = subprocess.run(["/usr/bin/python3", str(REPO / "nginx" / "render.py"),
                        str(REPO / "nginx" / "agenttest-site.conf.in"),
                        "LISTEN=80; include /etc/passwd"], capture_output=True, text=True)
    assert r.returncode == 2 and "unsafe value for LISTEN" in r.stderr


def render(*values):
    return subprocess.run(["/usr/bin/python3", str(REPO / "nginx" / "render.py"),
                           str(REPO / "nginx" / "agenttest-site.conf.in"), *values],
                          capture_output=True, text=True)


SITE_VALUES = ["LISTEN=127.0.0.1:1", "SERVER_NAME=_", "ACCESS_LOG=off", "FCGI_SOCKET=/x.sock",
               "STATIC_ROOT=/s", "BODY_LIMIT=1024", "CLIENT_MAX_BODY=66560", "RATE_BURST=1",
               "RETRY_AFTER=1", "UPSTREAM_KEEPALIVE=0", "ALLOWED_HOSTS=localhost,127.0.0.1,[::1]"]


def test_renderer_allowed_hosts_map():
    """#@each repeats the map entry per host (issue 11 item 11)."""
    values = [v for v in SITE_VALUES if not v.startswith("ALLOWED_HOSTS=")]
    r = render(*values, "RATE_RPM=0", "ALLOWED_HOSTS=agenttest.example.org,localhost")
    assert r.returncode == 0, r.stderr
    block = r.stdout.split("map $host $agenttest_host_ok {", 1)[1].split("}", 1)[0]
    entries = [l.strip() for l in block.splitlines() if l.strip()]
    assert entries == ["default 0;", '"agenttest.example.org" 1;', '"localhost" 1;'], entries
    # the three API locations (fastcgi.conf: API, /api/, agent events), the
    # dashboard and the static assets
    assert r.stdout.count("if ($agenttest_host_ok = 0)") == 5
    events = r.stdout.split("location ~ ^/api/agents/[^/]+/events$ {", 1)[1].split("location /api/ {", 1)[0]
    assert "fastcgi_buffering off;" in events
    bad = render(*values, "RATE_RPM=0", "ALLOWED_HOSTS=evil;return")
    assert bad.returncode == 2 and "unsafe value" in bad.stderr


def test_renderer_rate_limit_zero_removes_limit_req():
    on = render(*SITE_VALUES, "RATE_RPM=60")
    off = render(*SITE_VALUES, "RATE_RPM=0")
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    assert "limit_req zone=agenttest_perip burst=1 nodelay;" in on.stdout
    directives = [l for l in off.stdout.splitlines() if not l.lstrip().startswith("#")]
    assert not [l for l in directives if "limit_req" in l], directives
    assert "keepalive" not in off.stdout.split("upstream agenttest_pool", 1)[1].split("}", 1)[0]
    assert not re.search(r"@[A-Z][A-Z0-9_]*@", on.stdout)


def test_renderer_requires_every_value():
    r = render(*[v for v in SITE_VALUES if not v.startswith("FCGI_SOCKET=")], "RATE_RPM=0")
    assert r.returncode == 2 and "@FCGI_SOCKET@" in r.stderr


def test_nginx_read_timeout_outlasts_the_longest_wait():
    """A request with wait=60 is answered by the pool after 60 s (202 with
    the run as it is); with nginx's fastcgi_read_timeout also 60 s the
    answer raced the timeout and lost under load (504 after 60.1 s,
    tests/bench/api_stall.sh at load 27). The timeout leaves a margin."""
    wait = int(re.search(r"#define RUNS_MAX_WAIT_S (\d+)", (REPO / "fcgi/handlers/runs.c").read_text()).group(1))
    conf = (REPO / "nginx/snippets/fastcgi.conf").read_text()
    read = int(re.search(r"^fastcgi_read_timeout\s+(\d+)s;", conf, re.M).group(1))
    assert read >= wait + 15, (read, wait)
