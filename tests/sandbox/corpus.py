#!/usr/bin/python3
"""The sandbox escape corpus: hostile strategies with expected verdicts.

Run by tests/stages/35-sandbox.sh as root:

    corpus.py --drive BUILD/tests/sandbox/sbx-drive --helper bin/agenttest-sandbox \
              --prog BUILD/tests/sandbox/verdict_prog --junit OUT.xml

Every case is a strategy (Python source) run through the real client
library, helper or zygote, and strategy host (sbx-drive). A strategy reports
a successful escape by raising "ESCAPED: ..." (which the host turns into an
ERROR frame); every case fails on any ESCAPED, on an unexpected verdict, and
on side effects the harness checks itself: connections that reached the
TCP, UDP and unix listeners it opened, canary files that changed. Cases run
in both modes (zygote and one-shot) unless marked. A second table runs the
helper directly on a tiny static program (verdict_prog) for each status.
"""
import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

CPU, WALL, MEM, OUTPUT = 2.0, 8.0, 256 << 20, 1 << 20   # wall: room for a loaded machine
SLOW_LIMITS = ["--cpu=30", "--wall=60"]  # later options win in sbx-drive

# name -> (source of the hostile part, expected statuses, modes, extra check)
# The source runs at load time inside simulate's module; {port}, {uport},
# {usock}, {secret}, {dbconf}, {canary}, {tmpdir} are filled in.
RET = "\ndef simulate(prices, params):\n    return [1.0] * len(prices)\n"


# A word of a read-only private mapping of a file every box can map: a
# shared futex on it would be keyed by the file, so it would reach other boxes.
FILE_WORD = ("import ctypes, os, time\nlibc = ctypes.CDLL(None, use_errno=True)\n"
             "libc.mmap.restype = ctypes.c_void_p\n"
             "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]\n"
             "fd = os.open('/usr/bin/python3', os.O_RDONLY)\naddr = libc.mmap(None, 4096, 1, 2, fd, 0)\n"
             "word = ctypes.c_uint32.from_address(addr + 64).value\naddr += 64\n")


def case(src, expect, modes=("zygote", "oneshot"), check=None, slow=False, full=True):
    """slow: heavy work, run with generous limits (SLOW_LIMITS): benign
    work, or a memory bomb that must meet the memory limit before the CPU
    limit (on a virtual machine whose fresh memory the host faults in, filling
    256 MiB has taken 2.1 s of CPU, past CPU's 2 s, seen on the old tree too).
    full=False: a "zygote" case that holds only on the zygote its source is
    routed to, so it is left out of the pass that forces the FULL zygote."""
    return {"src": src, "expect": set(expect), "modes": modes, "check": check, "slow": slow, "full": full}


def escaped_if(cond_src, what):
    return "if %s:\n    raise RuntimeError('ESCAPED: %s')\n" % (cond_src, what)


CASES = {
    # --- network ---
    "tcp_connect": case(
        "import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
        "raise RuntimeError('ESCAPED: tcp connected')\n", ["SY"],
        check=lambda r, h: r["syscall"] == "socket"),
    "udp_send": case(
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "s.sendto(b'x', ('127.0.0.1', {uport}))\nraise RuntimeError('ESCAPED: udp sent')\n", ["SY"]),
    "ipv6_socket": case(
        "import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_STREAM)\n"
        "raise RuntimeError('ESCAPED: ipv6 socket')\n", ["SY"]),
    "netlink_socket": case(
        "import socket\nsocket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\n"
        "raise RuntimeError('ESCAPED: netlink')\n", ["SY"]),
    "net_interfaces": case(
        "devs = [l.split(':')[0].strip() for l in open('/proc/self/net/dev').read().splitlines()[2:]]\n"
        + escaped_if("devs != ['lo']", "interfaces ' + repr(devs) + '"), ["OK"]),
    "dns_lookup": case(
        "import socket\ntry:\n    socket.getaddrinfo('example.com', 80)\n"
        "    raise RuntimeError('ESCAPED: resolved')\nexcept socket.gaierror:\n    pass\n", ["OK", "SY"]),
    "unix_socket_db": case(
        "import socket\ntry:\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "    s.connect('{usock}')\n    raise RuntimeError('ESCAPED: unix connected')\n"
        "except PermissionError:\n    pass\n", ["OK"]),
    "raw_syscall_socket": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.syscall(41, 2, 1, 0)\n" + escaped_if("fd >= 0", "raw socket"), ["SY"],
        check=lambda r, h: r["syscall"] == "socket"),
    # --- reading secrets ---
    "read_shadow": case(
        "try:\n    open('/etc/shadow').read()\n    raise RuntimeError('ESCAPED: shadow')\n"
        "except FileNotFoundError:\n    pass\n", ["OK"]),
    "read_proc1_environ": case(
        "try:\n    data = open('/proc/1/environ', 'rb').read()\nexcept PermissionError:\n    data = b''\n"
        + escaped_if("b'AGENTTEST_TEST_SECRET' in data or b'hunter2' in data or b'DATABASE_URL' in data",
                     "environ secret"), ["OK"]),
    "read_server_secret": case(
        "try:\n    open('{secret}').read()\n    raise RuntimeError('ESCAPED: secret')\n"
        "except FileNotFoundError:\n    pass\n", ["OK"]),
    "read_db_config": case(
        "try:\n    open('{dbconf}').read()\n    raise RuntimeError('ESCAPED: db config')\n"
        "except FileNotFoundError:\n    pass\n", ["OK"]),
    "host_tree_hidden": case(
        "import os\nleft = set(os.listdir('/')) & {{'home', 'root', 'var', 'run', 'tmp', 'srv', 'opt', 'sys', 'mnt', 'boot', 'media'}}\n"
        + escaped_if("left", "host dirs visible: %s' % sorted(left) + '"), ["OK"]),
    "etc_minimal": case(
        "import os\nextra = set(os.listdir('/etc')) - {{'ld.so.cache', 'localtime', 'alternatives'}}\n"
        + escaped_if("extra", "etc has ' + repr(sorted(extra)) + '"), ["OK"]),
    "dev_mem": case(
        "for p in ('/dev/mem', '/dev/kmem', '/dev/port', '/dev/sda', '/dev/shm'):\n"
        "    try:\n        open(p, 'rb')\n        raise RuntimeError('ESCAPED: ' + p)\n"
        "    except FileNotFoundError:\n        pass\n", ["OK"]),
    "env_no_secrets": case(
        "import os\nbad = [k for k in os.environ if k not in ('PATH', 'LANG', 'LC_ALL', 'HOME', "
        "'PYTHONDONTWRITEBYTECODE', 'PYTHONHASHSEED', 'OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', "
        "'MKL_NUM_THREADS', 'NUMEXPR_NUM_THREADS', 'LC_CTYPE')]\n"
        + escaped_if("bad", "env has ' + repr(bad) + '"), ["OK"]),
    "proc_other_processes": case(
        "import os\npids = [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]\n"
        + escaped_if("pids", "sees processes ' + repr(pids[:5]) + '"), ["OK"]),
    # issue 11 item 15: no file the box can read under /proc (mountinfo's
    # root field above all) names the checkout or installation directory
    "proc_names_no_server_path": case(
        "import os\nneedles = [n.encode() for n in {server_paths!r}]\nhits, seen = [], 0\n"
        "for d, dirs, files in os.walk('/proc', followlinks=False):\n"
        "    for name in files + dirs:\n"
        "        p = os.path.join(d, name)\n"
        "        seen += 1\n"
        "        try:\n"
        "            data = os.readlink(p).encode() if os.path.islink(p) else b''\n"
        "            if not data and name not in ('pagemap', 'mem', 'kcore', 'kmsg') and os.path.isfile(p):\n"
        "                with open(p, 'rb') as f:\n                    data = f.read(1 << 20)\n"
        "        except OSError:\n            continue\n"
        "        hits += [p for n in needles if n in data]\n"
        "    if seen > 50000:\n        break\n"
        + escaped_if("hits or seen < 50", "server path in ' + repr(sorted(set(hits))[:8]) + ' (' + str(seen) + ' entries)"), ["OK"]),
    "box_identity": case(
        "import os\n" + escaped_if("os.getuid() < 60000 or os.getgid() < 60000 or os.getgroups()",
                                   "runs as ' + repr((os.getuid(), os.getgid(), os.getgroups())) + '"), ["OK"]),
    # --- writing ---
    "write_canary": case(
        "try:\n    open('{canary}', 'w').write('pwned')\n    raise RuntimeError('ESCAPED: wrote canary')\n"
        "except (PermissionError, FileNotFoundError, OSError):\n    pass\n", ["OK"]),
    "write_anywhere": case(
        "import os\nfor p in ('/x', '/usr/x', '/dev/x', '/proc/x', '/etc/x', '{tmpdir}/x'):\n"
        "    try:\n        open(p, 'w').write('x')\n        raise RuntimeError('ESCAPED: wrote ' + p)\n"
        "    except OSError:\n        pass\n"
        "for f in (os.mkdir, os.rmdir, os.unlink):\n    try:\n        f('/usr/lib')\n"
        "        raise RuntimeError('ESCAPED: fs change')\n    except OSError:\n        pass\n", ["OK"]),
    "proc_self_mem_write": case(
        "try:\n    open('/proc/self/mem', 'r+b')\n    raise RuntimeError('ESCAPED: /proc/self/mem')\n"
        "except OSError:\n    pass\n", ["OK"]),
    # --- resources ---
    "fork_bomb": case(
        "import os\nn = 0\ntry:\n    while n < 10000:\n        os.fork()\n        n += 1\nexcept OSError:\n    pass\n"
        + escaped_if("n > 0", "forked ' + str(n) + '"), ["OK"]),
    "subprocess_shell": case(
        "import subprocess\ntry:\n    subprocess.run(['/bin/sh', '-c', 'id'], check=True)\n"
        "    raise RuntimeError('ESCAPED: shell ran')\nexcept OSError:\n    pass\n", ["OK"]),
    "exec_in_place": case(
        "import os\nos.execv('/usr/bin/python3', ['python3', '-c', 'print(1)'])\n", ["SY"],
        check=lambda r, h: r["syscall"] == "execve"),
    "alloc_1g": case("x = b'x' * (1 << 30)\n", ["ML"], slow=True),
    "alloc_numpy_1g": case("import numpy as np\nx = np.ones(1 << 27)\n", ["ML"], slow=True),
    "cpu_spin": case("while True:\n    pass\n", ["TO"]),
    "sleep_past_wall": case("import time\ntime.sleep(60)\n", ["TO"]),
    "stdout_flood": case(
        "import os, sys\nwhile True:\n    os.write(1, b'x' * 65536)\n", ["OL"]),
    "stderr_flood": case(
        "import sys\nwhile True:\n    sys.stderr.write('y' * 65536)\n", ["OL"]),
    # --- kernel attack surface ---
    "ptrace_parent": case(
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.ptrace(16, os.getppid(), 0, 0)\n" + escaped_if("r == 0", "ptrace attached"), ["SY"],
        check=lambda r, h: r["syscall"] == "ptrace"),
    "mount_tmpfs": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.mount(b'none', b'/proc', b'tmpfs', 0, None)\n" + escaped_if("r == 0", "mounted"), ["SY"],
        check=lambda r, h: r["syscall"] == "mount"),
    "unshare_user": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.unshare(0x10000000)\n" + escaped_if("r == 0", "unshared"), ["SY"],
        check=lambda r, h: r["syscall"] == "unshare"),
    "clone_newuser": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)\n" + escaped_if("r >= 0", "cloned"), ["OK"]),
    "setuid_root": case("import os\nos.setuid(0)\nraise RuntimeError('ESCAPED: setuid')\n", ["SY"]),
    "kill_everything": case("import os\nos.kill(-1, 9)\n", ["SY"],
                            check=lambda r, h: r["syscall"] == "kill"),
    "mmap_wx": case(
        "import mmap\nm = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "raise RuntimeError('ESCAPED: W+X mapping')\n", ["SY"],
        check=lambda r, h: r["syscall"] == "mmap"),
    "mprotect_wx": case(
        "import ctypes, mmap\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "m = mmap.mmap(-1, 4096)\nbuf = (ctypes.c_char * 4096).from_buffer(m)\n"
        "r = libc.mprotect(ctypes.addressof(buf), 4096, 7)\n" + escaped_if("r == 0", "mprotect W+X"), ["SY"],
        check=lambda r, h: r["syscall"] == "mprotect"),
    "mprotect_flip_rx": case(
        "import ctypes, mmap\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "m = mmap.mmap(-1, 4096)\nm.write(b'\\xc3')\nbuf = (ctypes.c_char * 4096).from_buffer(m)\n"
        "r = libc.mprotect(ctypes.addressof(buf), 4096, 5)\n" + escaped_if("r == 0", "flipped to R+X"), ["SY"],
        check=lambda r, h: r["syscall"] == "mprotect"),
    "mmap_anon_exec": case(
        "import mmap\nm = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)\n"
        "raise RuntimeError('ESCAPED: anonymous executable mapping')\n", ["SY"],
        check=lambda r, h: r["syscall"] == "mmap"),
    "ctypes_callback": case(
        "import ctypes\nctypes.CFUNCTYPE(ctypes.c_int)(lambda: 0)\n"
        "raise RuntimeError('ESCAPED: libffi closure (W+X)')\n", ["SY"]),
    "memfd_exec": case("import os\nos.memfd_create('x')\nraise RuntimeError('ESCAPED: memfd')\n", ["SY"]),
    "bpf_syscall": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall(321, 0, 0, 0)\n", ["SY"],
        check=lambda r, h: r["syscall"] == "bpf"),
    "keyctl": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall(250, 0, 0, 0)\n", ["SY"]),
    "io_uring": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall(425, 1, 0)\n", ["SY"]),
    "userfaultfd": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall(323, 0)\n", ["SY"]),
    "perf_event_open": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall(298, 0, 0, -1, -1, 0)\n", ["SY"]),
    "chroot": case("import os\nos.chroot('/usr')\n", ["SY"]),
    "tiocsti": case(
        "import fcntl, termios\ntry:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x')\n"
        "    raise RuntimeError('ESCAPED: TIOCSTI')\nexcept OSError:\n    pass\n", ["OK"]),
    "segfault": case("import ctypes\nctypes.string_at(0)\n", ["SG"]),
    "hard_exit": case("import os\nos._exit(7)\n", ["RE"], check=lambda r, h: r["exitcode"] == 7),
    # --- channels between boxes (single-box half; the two-box attacks are below) ---
    "file_locks_refused": case(
        "import errno, fcntl, struct\nf = open('/usr/bin/python3', 'rb')\n"
        "for what, op in (('lockf', lambda: fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0)),\n"
        "                 ('flock', lambda: fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)),\n"
        "                 ('getlk', lambda: fcntl.fcntl(f, fcntl.F_GETLK, struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 1, 0))),\n"
        "                 ('ofd', lambda: fcntl.fcntl(f, 37, struct.pack('hhqqi', fcntl.F_RDLCK, 0, 0, 1, 0))),\n"
        "                 ('lease', lambda: fcntl.fcntl(f, 1024, fcntl.F_RDLCK))):\n"
        "    try:\n        op()\n        raise RuntimeError('ESCAPED: ' + what + ' worked')\n"
        "    except OSError as e:\n"
        "        if e.errno not in (errno.ENOLCK, errno.EINVAL):\n"
        "            raise RuntimeError('ESCAPED: ' + what + ' errno ' + str(e.errno))\n", ["OK"]),
    "mmap_shared_file": case(
        # fd 4 is the run's market memory, the one descriptor that may be mapped shared
        "import mmap, os\nf = open('/usr/bin/python3', 'rb')\nfd = f.fileno() if f.fileno() != 4 else os.dup(4)\ntry:\n"
        "    mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)\n"
        "    raise RuntimeError('ESCAPED: shared file mapping')\nexcept PermissionError:\n    pass\n"
        "mmap.mmap(f.fileno(), 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ).close()\n"
        "mmap.mmap(-1, 4096).close()\n", ["OK"]),
    "futex_shared_wait": case(
        FILE_WORD + "libc.syscall(202, ctypes.c_void_p(addr), 0, word, None, None, 0)\n"
        "raise RuntimeError('ESCAPED: shared futex wait returned')\n", ["SY"],
        check=lambda r, h: r["syscall"] == "futex"),
    "sysinfo_refused": case(
        "import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.sysinfo(ctypes.create_string_buffer(128))\n"
        + escaped_if("r == 0 or ctypes.get_errno() != errno.ENOSYS", "sysinfo answered"), ["OK"]),
    "prctl_eperm": case(
        "import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "for op in (4, 22, 38, 1499557217):\n    r = libc.prctl(op, 0, 0, 0, 0)\n"
        "    if r != -1 or ctypes.get_errno() != errno.EPERM:\n"
        "        raise RuntimeError('prctl %d gave %d errno %d' % (op, r, ctypes.get_errno()))\n"
        "assert libc.prctl(15, b'worker', 0, 0, 0) == 0\n", ["OK"]),
    "ioctl_allowed": case(
        "import fcntl, os, termios, errno\nr, w = os.pipe()\nos.set_blocking(r, False)\n"
        "assert not os.get_blocking(r)\nos.write(w, b'abc')\n"
        "assert int.from_bytes(fcntl.ioctl(r, termios.FIONREAD, b'\\0' * 4), 'little') == 3\n"
        "fcntl.ioctl(r, termios.FIOCLEX)\nfcntl.ioctl(r, termios.FIONCLEX)\n"
        "try:\n    fcntl.ioctl(r, termios.TIOCGPGRP, b'\\0' * 4)\n    raise RuntimeError('TIOCGPGRP worked')\n"
        "except OSError as e:\n    assert e.errno == errno.ENOTTY, e\n", ["OK"]),
    "x32_syscall": case(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall(0x40000000 + 39)\n"
        "raise RuntimeError('ESCAPED: x32 getpid ran')\n", ["SY"]),
    "x32_syscall_thread": case(
        "import ctypes, threading\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "t = threading.Thread(target=lambda: libc.syscall(0x40000000 + 39))\nt.start(); t.join()\n"
        "raise RuntimeError('ESCAPED: x32 getpid ran in a thread')\n", ["SY"]),
    # --- benign: must work ---
    "benign_numpy": case(
        "import numpy as np\nassert abs(np.linalg.inv(np.eye(3) * 2).sum() - 1.5) < 1e-12\n", ["OK"]),
    "benign_pandas": case(
        "import pandas as pd\ns = pd.Series(range(10)).rolling(3).mean()\nassert s.iloc[-1] == 8.0\n", ["OK"]),
    "benign_scipy": case(
        "import scipy.stats, scipy.optimize\nassert abs(scipy.stats.norm.cdf(0) - 0.5) < 1e-12\n"
        "assert abs(scipy.optimize.brentq(lambda x: x * x - 2, 0, 2) - 2 ** 0.5) < 1e-9\n", ["OK"], slow=True),
    "benign_sklearn_fit": case(
        "import numpy as np\nfrom sklearn.linear_model import LinearRegression\n"
        "from sklearn.ensemble import RandomForestClassifier\n"
        "x = np.random.default_rng(0).normal(size=(200, 3))\ny = x @ [1.0, 2.0, 3.0]\n"
        "assert np.allclose(LinearRegression().fit(x, y).coef_, [1, 2, 3])\n"
        "RandomForestClassifier(n_estimators=5, random_state=0).fit(x, y > 0)\n", ["OK"], slow=True),
    "benign_threads": case(
        "import threading\nout = []\nt = threading.Thread(target=lambda: out.append(sum(range(1000))))\n"
        "t.start(); t.join()\nassert out == [499500]\n", ["OK"]),
    "benign_pwd_lookup": case(
        "import os, pwd\ntry:\n    pwd.getpwuid(os.getuid())\nexcept KeyError:\n    pass\n", ["OK"]),
    # a zygote's warm child runs the host's warm-up unconfined: the strategy must
    # only ever start after the confinement (box uid, no_new_privs, seccomp filter)
    "confined_before_strategy_code": case(
        "import linecache, os\nst = open('/proc/self/status').read()\n"
        + escaped_if("os.getuid() == 0 or os.geteuid() == 0 or 'NoNewPrivs:\\t1' not in st "
                     "or 'Seccomp:\\t2' not in st", "strategy code ran unconfined")
        + escaped_if("any('def simulate(prices, params):\\n    p0' in ''.join(v[2]) "
                     "for v in linecache.cache.values() if len(v) > 2 and v[2])", "warm-up source left behind"),
        ["OK"]),
}



def thp_usable():
    """True if this kernel can back memory with transparent huge pages at all."""
    try:
        return "[never]" not in open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        return False


# Per-run cost (issue 19, docs/sandbox.md): the zygote's heap is huge pages
# (sandbox/heap_thp.c), so a run starts with part of it still mapped 2 MiB
# at a time; without that, a fork copies and an exit zaps 512 times more
# page-table entries. Its own /proc shows it; a kernel without THP cannot.
# Checked on the full zygote (the comment routes it there): the small one's
# heap is six huge pages, which a run's first writes split, every one.
if thp_usable():
    CASES["zygote_heap_huge_pages"] = case(
        "# pandas\n"
        "kb = [int(l.split()[1]) for l in open('/proc/self/smaps_rollup') if l.startswith('AnonHugePages:')]\n"
        "if not kb or kb[0] < 2048:\n    raise RuntimeError('zygote heap not in huge pages: %r' % kb)\n",
        ["OK"], modes=("zygote",))

# ... and the zygote took its heap's free chunks before forking
# (sandbox/heap_plug.c), so a run's allocations come from fresh pages at the
# top of the heap, not from holes on inherited pages (each a copied page).
# Measured at a run's load: about 30 free chunks with it, over 2,000 without.
CASES["zygote_heap_plugged"] = case(
    "import ctypes\nclass MI(ctypes.Structure):\n    _fields_ = [(n, ctypes.c_size_t) for n in "
    "('arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')]\n"
    "libc = ctypes.CDLL(None)\nlibc.mallinfo2.restype = MI\nmi = libc.mallinfo2()\n"
    "holes = mi.fordblks - mi.keepcost\n"
    "if mi.ordblks > 300:\n    raise RuntimeError('free chunks on inherited pages: %d bytes in %d chunks' % (holes, mi.ordblks))\n",
    ["OK"], modes=("zygote",))

# Per-run cost (issue 19): a run goes to the small zygote (numpy alone)
# unless its source names pandas (sbx_zygote_for_code). The sources below
# spell the name in pieces where they must not be routed by it.
PD = "'pan' + 'das'"
CASES["zygote_small_for_numpy_code"] = case(
    "import sys\nif %s in sys.modules:\n    raise RuntimeError('preloaded: not routed to the small zygote')\n" % PD,
    ["OK"], full=False)
CASES["zygote_full_for_pandas_code"] = case(
    "import sys\npre = 'pandas' in sys.modules\nimport pandas\n"
    "if not pre:\n    raise RuntimeError('pandas was not preloaded: not routed to the full zygote')\n",
    ["OK"], modes=("zygote",))
# pandas reached in a way the routing cannot see still works on the small
# zygote, only slower (the run imports it itself)
CASES["small_zygote_imports_pandas"] = case(
    "pd = __import__(%s)\ns = pd.Series(range(10)).rolling(3).mean()\nassert s.iloc[-1] == 8.0\n" % PD,
    ["OK"], slow=True)

# Leak-between-runs pairs: the first run tampers, the second must see nothing.
LEAKS = {
    "leak_module_state": (
        "import numpy, json, builtins\nnumpy.LEAK = 1\njson.LEAK = 1\nbuiltins.LEAK = 1\n",
        "import numpy, json, builtins\n" + escaped_if(
            "hasattr(numpy, 'LEAK') or hasattr(json, 'LEAK') or hasattr(builtins, 'LEAK')", "module state leaked")),
    "leak_monkeypatch": (
        "import numpy\nnumpy.mean = lambda *a, **k: 0\n",
        "import numpy\n" + escaped_if("numpy.mean([1.0, 2.0]) != 1.5", "monkeypatch leaked")),
    "leak_threads": (
        "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n",
        "import threading\n" + escaped_if("threading.active_count() != 1", "thread leaked")),
    "leak_signal_handlers": (
        "import signal\nsignal.signal(signal.SIGTERM, lambda *a: None)\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\n",
        "import signal\n" + escaped_if("signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL or "
                                       "signal.getsignal(signal.SIGUSR1) is not signal.SIG_DFL", "handlers leaked")),
    "leak_sys_modules": (
        "import sys, types\nsys.modules['evil'] = types.ModuleType('evil')\nsys.path.insert(0, '/evil')\n",
        "import sys\n" + escaped_if("'evil' in sys.modules or '/evil' in sys.path", "sys state leaked")),
    "leak_files": (
        "for p in ('/tmp/leak', '/leak'):\n    try:\n        open(p, 'w').write('x')\n    except OSError:\n        pass\n",
        "import os\n" + escaped_if("os.path.exists('/tmp/leak') or os.path.exists('/leak')", "file leaked")),
}


# Cross-box channels (issue 11 item 2): name -> (scout, scorer, scorer's
# expected statuses). The scout runs in box 14, the scorer concurrently in
# box 15; the scorer raises ESCAPED if it observes the scout.
CROSS_BOX = {
    "cross_box_lock": (
        "import fcntl, os, time\nf = open('/usr/bin/python3', 'rb')\n"
        "for op in (lambda: fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0),\n"
        "           lambda: fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB),\n"
        "           lambda: fcntl.fcntl(f, 37, __import__('struct').pack('hhqqi', fcntl.F_RDLCK, 0, 0, 1, 0))):\n"
        "    try:\n        op()\n    except OSError:\n        pass\ntime.sleep(2.0)\n",
        "import errno, fcntl, struct, time\ntime.sleep(0.7)\nf = open('/usr/bin/python3', 'rb')\n"
        "for cmd in (fcntl.F_GETLK, 36):\n    try:\n"
        "        r = fcntl.fcntl(f, cmd, struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 1, 0))\n"
        "        if struct.unpack('hhqqi', r)[0] != fcntl.F_UNLCK:\n"
        "            raise RuntimeError('ESCAPED: saw the other box lock')\n"
        "    except OSError as e:\n        assert e.errno == errno.ENOLCK, e\n"
        "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n"
        "    raise RuntimeError('ESCAPED: flock held by the other box')\nexcept OSError as e:\n"
        "    assert e.errno == errno.ENOLCK, e\n",
        {"OK"}),
    "cross_box_futex": (
        "time.sleep(0.7)\n".join(["import time\n", FILE_WORD])
        + "end = time.time() + 2.0\nwhile time.time() < end:\n"
        "    n = libc.syscall(202, ctypes.c_void_p(addr), 1, 1, None, None, 0)\n"
        "    if n > 0:\n        raise RuntimeError('ESCAPED: woke a waiter in another box')\n"
        "    time.sleep(0.01)\n",
        FILE_WORD + "ts = (ctypes.c_long * 2)(3, 0)\nt0 = time.time()\n"
        "r = libc.syscall(202, ctypes.c_void_p(addr), 0, word, ts, None, 0)\n"
        + escaped_if("r == 0 and time.time() - t0 < 2.5", "woken by the other box"),
        {"SY"}),
}


class Listener:
    """TCP, UDP and unix listeners that record any connection or datagram."""

    def __init__(self, tmpdir):
        self.hits = []
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.usock_path = os.path.join(tmpdir, "mysqld.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.usock_path)
        os.chmod(self.usock_path, 0o777)
        self.unix.listen(8)
        for s, name in ((self.tcp, "tcp"), (self.unix, "unix")):
            threading.Thread(target=self._accept, args=(s, name), daemon=True).start()
        threading.Thread(target=self._recv, daemon=True).start()

    def _accept(self, s, name):
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            self.hits.append(name)
            c.close()

    def _recv(self):
        while True:
            try:
                self.udp.recvfrom(100)
            except OSError:
                return
            self.hits.append("udp")


def server_paths():
    """Where agenttest's own files live on this machine: the checkout (or
    installation) holding the strategy host, and the host directory."""
    host = os.path.realpath(os.environ.get("AGENTTEST_HOST_DIR") or
                            os.path.join(os.path.dirname(__file__), "..", "..", "sandbox", "host"))
    return [host, os.path.dirname(os.path.dirname(host))]


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run_drive(drive, files, env, extra=()):
    """Run sbx-drive on files; return the result objects in order."""
    cmd = [drive, "--cpu=%g" % CPU, "--wall=%g" % WALL, "--mem=%d" % MEM,
           "--output=%d" % OUTPUT] + list(extra) + files  # later options override
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
    out = []
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"status": "?", "message": "unparsable driver output: " + line[:200]})
    while len(out) < len(files):
        out.append({"status": "?", "message": "driver died: " + p.stderr.decode("utf-8", "replace")[-500:]})
    return out


def judge(name, res, expect, check, harness):
    """Return None if the case passed, else the failure text."""
    blob = json.dumps(res.get("frames", [])) + res.get("log", "")
    if "ESCAPED" in blob:
        i = blob.index("ESCAPED")
        return "escape: " + blob[i:i + 200]
    if res.get("status") not in expect:
        return "status %s (expected %s): %s | frames %s | log %s" % (
            res.get("status"), "/".join(sorted(expect)), res.get("message"),
            json.dumps(res.get("frames"))[:600], res.get("log", "")[-600:])
    if res.get("status") == "OK" and expect == {"OK"}:
        types = [f["type"] for f in res.get("frames", [])]
        if 0x83 not in types:
            return "no OUTPUT frame: %s | log %s" % (json.dumps(res.get("frames"))[:600], res.get("log", "")[-600:])
    if check and not check(res, harness):
        return "check failed: %s" % json.dumps({k: res.get(k) for k in ("status", "syscall", "exitcode", "frames")})[:600]
    return None


def write_sources(tmpdir, fill):
    paths = {}
    for name, c in CASES.items():
        p = os.path.join(tmpdir, "src", name + ".py")
        with open(p, "w") as f:
            f.write(c["src"].format(**fill) + RET)
        paths[name] = p
    for name, (a, b) in LEAKS.items():
        for i, src in enumerate((a, b)):
            p = os.path.join(tmpdir, "src", "%s_%d.py" % (name, i))
            with open(p, "w") as f:
                f.write(src + RET)
            paths["%s_%d" % (name, i)] = p
    return paths


def helper_table(helper, prog, tmpdir):
    """The helper on verdict_prog: (name, passed, detail) per row."""
    prog = os.path.abspath(prog)
    bindir = os.path.dirname(prog)
    rows = [("ok", ["--"], "OK"), ("exit3", [], "RE"), ("segv", [], "SG"), ("spin", ["--cpu=0.5"], "TO"),
            ("sleep", ["--wall=0.5"], "TO"), ("alloc", ["--mem=64M"], "ML"), ("socket", [], "SY"),
            ("flood", ["--output=1M"], "OL"), ("execve", [], "SY"), ("missing", [], "XX"),
            ("badopt", ["--mem=-5"], "XX"),
            # rlimits-only fallback: the allocation fails inside (RE), the record says why
            ("alloc", ["--mem=64M", "--no-cgroup"], "RE"),
            # debug mode: the socket call is let through and named in warnings
            ("socket", ["--seccomp-log"], "OK"),
            ("ok", ["--netns=fresh"], "OK"),
            # a private /tmp only when asked for
            ("tmpwrite", ["--tmp=1M"], "OK"),
            ("tmpwrite", [], "RE"),
            # --copy: the program runs from a private copy at a nested /agenttest
            # destination; only below /agenttest/
            ("ok", ["--copy"], "OK"), ("badopt", ["--copy=/usr/lib:/usr/x"], "XX"),
            # --workdir=SRC:DEST: DEST is the writable working directory
            ("cwdwrite", ["--workdir"], "OK")]
    out = []
    for i, (name, opts, want) in enumerate(rows):
        meta = os.path.join(tmpdir, "meta-%d-%s" % (i, name))
        opts = [o for o in opts if o != "--"]
        # the program's folder at a fixed place inside, wherever the checkout is
        # (a host path under /tmp would be hidden by --tmp's private /tmp)
        target = "/box-test/" + os.path.basename(prog) if name != "missing" else "/nonexistent/prog"
        wd = os.path.join(tmpdir, "wd-%d" % i)
        if opts == ["--copy"]:
            opts, target = ["--copy=%s:/agenttest/t/box" % bindir], "/agenttest/t/box/" + os.path.basename(prog)
        elif opts == ["--workdir"]:
            os.makedirs(wd)
            os.chmod(wd, 0o777)
            opts = ["--workdir=%s:/wd-test" % wd]
        cmd = [helper, "--box=%d" % 7, "--meta=" + meta, "--bind=%s:/box-test" % bindir] + opts + ["--", target, name]
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        rec = {}
        if os.path.exists(meta):
            for line in open(meta):
                k, _, v = line.rstrip("\n").partition(":")
                rec[k] = v
        ok = rec.get("status") == want
        want_rc = 2 if name in ("badopt", "missing") else 0
        ok = ok and p.returncode == want_rc
        if name == "exit3":
            ok = ok and rec.get("exitcode") == "3"
        if name in ("socket", "execve") and want == "SY":
            ok = ok and rec.get("syscall") == name
        if "--no-cgroup" in opts:
            ok = ok and "rlimits only" in rec.get("warnings", "")
        if name == "cwdwrite":
            ok = ok and os.path.exists(os.path.join(wd, "x"))
        if "--seccomp-log" in opts:
            ok = ok and "seccomp-log: socket" in rec.get("warnings", "")
        label = "helper_" + name + "".join(o.split("=")[0].replace("--", "_").replace("-", "_") for o in opts
                                           if o in ("--no-cgroup", "--seccomp-log", "--netns=fresh", "--tmp=1M")
                                           or o.startswith(("--copy=", "--workdir=")))
        out.append((label, ok, "rc=%d %s %s" % (p.returncode, rec, p.stderr.decode()[-300:])))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--drive", required=True)
    ap.add_argument("--helper", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--junit", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    tmpdir = tempfile.mkdtemp(prefix="sbx-corpus-")
    os.makedirs(os.path.join(tmpdir, "src"))
    os.chmod(tmpdir, 0o755)
    lis = Listener(tmpdir)
    secret = os.path.join(tmpdir, "server.secret")
    dbconf = os.path.join(tmpdir, "agenttest.conf")
    canary = os.path.join(tmpdir, "canary.txt")
    for p, text in ((secret, "s3cr3t-key\n"), (dbconf, "DATABASE_URL=mysql://root:pw@localhost/db\n"),
                    (canary, "untouched\n")):
        with open(p, "w") as f:
            f.write(text)
    os.chmod(canary, 0o666)
    before = {p: sha(p) for p in (secret, dbconf, canary)}
    fill = {"port": lis.tcp.getsockname()[1], "uport": lis.udp.getsockname()[1], "usock": lis.usock_path,
            "secret": secret, "dbconf": dbconf, "canary": canary, "tmpdir": tmpdir,
            "server_paths": server_paths()}
    paths = write_sources(tmpdir, fill)
    env = dict(os.environ)
    env["AGENTTEST_TEST_SECRET"] = "hunter2"
    env["DATABASE_URL"] = "mysql://root:hunter2@localhost/agenttest"
    only = set(filter(None, args.only.split(",")))
    results = []  # (suite, name, passed, detail, seconds)
    # zygote: each run on the zygote its source is routed to, as the runner
    # does (most on the small one); zygote-full: every zygote case again on
    # the FULL zygote (numpy and pandas preloaded)
    for mode in ("zygote", "zygote-full", "oneshot"):
        zyg = mode != "oneshot"
        menv = dict(env)
        menv["AGENTTEST_SANDBOX_ZYGOTE"] = "1" if zyg else "0"
        menv["AGENTTEST_SANDBOX_ZYGOTES"] = "1"

        def wanted(n, c, slow):
            if only and n not in only or c["slow"] != slow:
                return False
            return "zygote" in c["modes"] and c["full"] if mode == "zygote-full" else mode in c["modes"]
        names = [n for n, c in CASES.items() if wanted(n, c, False)]
        slow = [n for n, c in CASES.items() if wanted(n, c, True)]
        files = [paths[n] for n in names]
        leak_names = [n for n in LEAKS if not only or n in only] if zyg else []
        for n in leak_names:
            files += [paths[n + "_0"], paths[n + "_1"]]
        t0 = time.time()
        pre = {"zygote": ["--prestart"], "zygote-full": ["--prestart", "--zygote=full"]}.get(mode, [])
        res = run_drive(args.drive, files, menv, pre) if files else []
        if slow:
            sres = run_drive(args.drive, [paths[n] for n in slow], menv, pre + SLOW_LIMITS)
            res = res[:len(names)] + sres + res[len(names):]
            names = names + slow
        dt = (time.time() - t0) / max(len(files) + len(slow), 1)
        for i, n in enumerate(names):
            c = CASES[n]
            fail = judge(n, res[i], c["expect"], c["check"], lis)
            if not fail and zyg and "zygote" not in res[i].get("warnings", "") and res[i].get("status") != "XX":
                fail = "did not run through the zygote: " + res[i].get("warnings", "")
            results.append((mode, n, fail is None, fail or "", dt))
        for j, n in enumerate(leak_names):
            first, second = res[len(names) + 2 * j], res[len(names) + 2 * j + 1]
            fail = judge(n + "/tamper", first, {"OK"}, None, lis) or judge(n + "/check", second, {"OK"}, None, lis)
            results.append((mode, n, fail is None, fail or "", dt))
    # concurrent runs cannot see each other: one sleeps, one looks around
    if not only or "concurrent_isolation" in only:
        spy = os.path.join(tmpdir, "src", "spy.py")
        sleeper = os.path.join(tmpdir, "src", "sleeper.py")
        with open(sleeper, "w") as f:
            f.write("import time\nSECRET_DATA = 'run-a-private'\ntime.sleep(1.5)\n" + RET)
        with open(spy, "w") as f:
            f.write("import os, time\ntime.sleep(0.5)\nseen = [p for p in os.listdir('/proc') if p.isdigit()]\n"
                    + escaped_if("len(seen) != 1", "sees ' + repr(seen) + '") + RET)
        for mode in ("zygote", "oneshot"):
            menv = dict(env)
            menv["AGENTTEST_SANDBOX_ZYGOTE"] = "1" if mode == "zygote" else "0"
            t0 = time.time()
            pre = ["--prestart"] if mode == "zygote" else []
            pa = subprocess.Popen([args.drive, "--box=11"] + pre + [sleeper], env=menv, stdout=subprocess.PIPE)
            rb = run_drive(args.drive, [spy], menv, ["--box=12"] + pre)[0]
            ra = json.loads(pa.communicate(timeout=120)[0].decode().splitlines()[0])
            fail = judge("spy", rb, {"OK"}, None, lis) or judge("sleeper", ra, {"OK"}, None, lis)
            results.append((mode, "concurrent_isolation", fail is None, fail or "", time.time() - t0))
        # two cooperating boxes: a scout that signals, a scorer that listens
        for kind, (scout_src, scorer_src, want) in CROSS_BOX.items():
            sp, rp = (os.path.join(tmpdir, "src", "%s_%s.py" % (kind, w)) for w in ("scout", "scorer"))
            for path, src in ((sp, scout_src), (rp, scorer_src)):
                with open(path, "w") as f:
                    f.write(src + RET)
            for mode in ("zygote", "oneshot"):
                menv = dict(env)
                menv["AGENTTEST_SANDBOX_ZYGOTE"] = "1" if mode == "zygote" else "0"
                pre = ["--prestart"] if mode == "zygote" else []
                t0 = time.time()
                pa = subprocess.Popen([args.drive, "--box=14"] + pre + [sp], env=menv, stdout=subprocess.PIPE)
                rb = run_drive(args.drive, [rp], menv, ["--box=15"] + pre)[0]
                ra = json.loads(pa.communicate(timeout=120)[0].decode().splitlines()[0])
                fail = judge("scorer", rb, want, None, lis) or judge("scout", ra, {"OK"}, None, lis)
                if not fail and want == {"SY"} and rb.get("syscall") != "futex":
                    fail = "scorer ended on %s, expected the futex wait to be refused" % rb.get("syscall")
                results.append((mode, kind, fail is None, fail or "", time.time() - t0))
        # a private work dir of one run is invisible to another
        wa, wb = os.path.join(tmpdir, "work-a"), os.path.join(tmpdir, "work-b")
        for w in (wa, wb):
            os.makedirs(w)
            os.chmod(w, 0o777)
        with open(os.path.join(wa, "data.csv"), "w") as f:
            f.write("private\n")
        reader = os.path.join(tmpdir, "src", "workdir_reader.py")
        with open(reader, "w") as f:
            f.write("import os\nopen('%s/mine.txt', 'w').write('ok')\ntry:\n    open('%s/data.csv').read()\n"
                    "    raise RuntimeError('ESCAPED: other work dir')\nexcept FileNotFoundError:\n    pass\n"
                    % (wb, wa) + RET)
        r = run_drive(args.drive, [reader], env, ["--box=13", "--workdir=" + wb])[0]
        fail = judge("workdir", r, {"OK"}, None, lis)
        if not fail and not os.path.exists(os.path.join(wb, "mine.txt")):
            fail = "the run could not write its own work dir: " + r.get("log", "")[-300:]
        results.append(("oneshot", "workdir_isolation", fail is None, fail or "", 0))
    # a dead zygote is replaced: kill the pool's helpers between runs
    if not only or "zygote_restart" in only:
        ok_src = os.path.join(tmpdir, "src", "plain.py")
        with open(ok_src, "w") as f:
            f.write(RET)
        menv = dict(env)
        menv["AGENTTEST_SANDBOX_ZYGOTE"] = "1"
        rs = run_drive(args.drive, [ok_src, ok_src, ok_src], menv, ["--prestart", "--kill-helpers"])
        fail = None
        for r in rs:
            fail = fail or judge("restart", r, {"OK"}, None, lis)
        if not fail and "zygote" not in rs[-1].get("warnings", ""):
            fail = "last run did not go through a (restarted) zygote: " + rs[-1].get("warnings", "")
        results.append(("zygote", "zygote_restart", fail is None, fail or "", 0))
    # a run that hits its memory limit, then plain runs, on one helper: the
    # later runs join the group the earlier one emptied (cgroup v1 recycles
    # it, zygote_sup.c) and must start clean, with no OOM kill and no peak
    # carried over from it
    if not only or "recycled_group_starts_clean" in only:
        bomb, plain = (os.path.join(tmpdir, "src", n) for n in ("recycle_bomb.py", "recycle_plain.py"))
        with open(bomb, "w") as f:
            f.write("held = [bytearray(1 << 20) for _ in range(400)]\n" + RET)
        with open(plain, "w") as f:
            f.write(RET)
        menv = dict(env)
        menv["AGENTTEST_SANDBOX_ZYGOTE"] = "1"
        menv["AGENTTEST_SANDBOX_ZYGOTES"] = "1"
        rs = run_drive(args.drive, [plain, bomb, plain, bomb, plain], menv,
                       ["--prestart", "--mem=%d" % (200 << 20)])
        fail = None
        for i, r in enumerate(rs):
            fail = fail or judge("recycle_%d" % i, r, {"ML"} if i % 2 else {"OK"}, None, lis)
        for r in rs[2::2]:
            if not fail and "warm child" not in r.get("warnings", ""):
                fail = "did not run in a warm child: " + r.get("warnings", "")
            if not fail and r.get("cg_mem", 0) >= 100 << 20:
                fail = "peak carried over from the run before: %s bytes" % r.get("cg_mem")
        results.append(("zygote", "recycled_group_starts_clean", fail is None, fail or "", 0))
    # cancellation (sbx_kill) ends a run that would sleep for a minute
    if not only or "cancel" in only:
        slp = os.path.join(tmpdir, "src", "cancel_me.py")
        with open(slp, "w") as f:
            f.write("import time\ntime.sleep(60)\n" + RET)
        for mode in ("zygote", "oneshot"):
            menv = dict(env)
            menv["AGENTTEST_SANDBOX_ZYGOTE"] = "1" if mode == "zygote" else "0"
            pre = ["--prestart"] if mode == "zygote" else []
            r = run_drive(args.drive, [slp], menv, ["--wall=60", "--cpu=60", "--cancel-after=1"] + pre)[0]
            fail = judge("cancel", r, {"SG"}, None, lis)
            if not fail and ("cancelled" not in r.get("message", "") or r.get("time_wall", 99) > 10):
                fail = "not cancelled promptly: %s %s" % (r.get("message"), r.get("time_wall"))
            results.append((mode, "cancel", fail is None, fail or "", 0))
    # the zygote's direct path (no warm child prepared ahead), on a sample
    if not only or "direct_path" in only:
        menv = dict(env)
        menv.update(AGENTTEST_SANDBOX_ZYGOTE="1", AGENTTEST_ZYGOTE_WARM="0")
        sample = ["tcp_connect", "read_shadow", "alloc_1g", "mmap_wx", "benign_numpy", "hard_exit"]
        rs = run_drive(args.drive, [paths[n] for n in sample], menv, ["--prestart"])
        for n, r in zip(sample, rs):
            c = CASES[n]
            fail = judge(n, r, c["expect"], c["check"], lis)
            if not fail and "zygote;" not in r.get("warnings", ""):
                fail = "did not take the direct zygote path: " + r.get("warnings", "")
            results.append(("zygote-direct", n, fail is None, fail or "", 0))
    # the stream's shared memory reaches the host as fd 4 in every mode
    if not only or "shm_fd" in only:
        shm_src = os.path.join(tmpdir, "src", "shm.py")
        with open(shm_src, "w") as f:
            f.write("import mmap, os\nm = mmap.mmap(4, 6, prot=mmap.PROT_READ)\n"
                    "if m[:6] != b'shm-ok':\n    raise RuntimeError('bad shm ' + repr(m[:6]))\n" + RET)
        for mode in ("zygote", "oneshot", "trusted"):
            menv = dict(env)
            menv["AGENTTEST_SANDBOX_ZYGOTE"] = "1" if mode == "zygote" else "0"
            extra = ["--shm"] + (["--trusted"] if mode == "trusted" else []) + (["--prestart"] if mode == "zygote" else [])
            r = run_drive(args.drive, [shm_src], menv, extra)[0]
            fail = judge("shm", r, {"OK"}, None, lis)
            if not fail and mode == "zygote" and "zygote" not in r.get("warnings", ""):
                fail = "did not run through the zygote: " + r.get("warnings", "")
            results.append((mode, "shm_fd", fail is None, fail or "", 0))
    # a run's results do not depend on the zygote it forked from: the same
    # numpy code, pandas code the routing cannot see, and standard-library
    # code, on the plain zygote (which has no numpy until the code imports
    # it: its generator is seeded then), the small one, the full one and
    # one-shot give the same output bytes
    if not only or "zygote_kinds_identical" in only:
        same = {
            "numpy": "import numpy as np, random\n"
                     "def simulate(prices, params):\n    p = np.asarray(prices, dtype=float)\n"
                     "    noise = np.random.standard_normal(len(p)) * 1e-3 + random.random() * 1e-6\n"
                     "    return list(np.cumprod(1 + np.diff(np.log(p), prepend=np.log(p[0])) + noise) "
                     "* np.exp(np.sin(p) / 7))\n",
            "runtime_import": "pd = __import__(%s)\nimport numpy as np\n"
                              "def simulate(prices, params):\n    s = pd.Series(prices, dtype=float)\n"
                              "    r = s.pct_change().fillna(0).ewm(span=5).mean().rolling(3, min_periods=1).std()\n"
                              "    return list((1 + r.fillna(0) + np.random.standard_normal(len(s)) * 1e-4).cumprod())\n" % PD,
            "stdlib": "import math, random\n"
                      "J = random.random()\n"
                      "def simulate(prices, params):\n    e = [1.0]\n"
                      "    for a, b in zip(prices, prices[1:]):\n"
                      "        e.append(e[-1] * math.exp(math.log(b / a) / 3 + random.gauss(0, 1e-4) + J * 1e-9))\n"
                      "    return e\n",
            "numpy_at_import": "np = __import__('num' + 'py')\nW = np.random.standard_normal(3)\n"
                               "def simulate(prices, params):\n    p = np.asarray(prices, dtype=float)\n"
                               "    return list(np.cumprod(1 + np.diff(p, prepend=p[0]) / p * W[0] * 1e-2 "
                               "+ np.random.standard_normal(len(p)) * 1e-5))\n",
        }
        for n, src in same.items():
            path = os.path.join(tmpdir, "src", "same_%s.py" % n)
            with open(path, "w") as f:
                f.write(src)
            outs, fail = {}, None
            for kind, extra in (("plain", ["--prestart", "--zygote=plain"]),
                                ("small", ["--prestart", "--zygote=numpy"]), ("full", ["--prestart", "--zygote=full"]),
                                ("oneshot", [])):
                menv = dict(env)
                menv["AGENTTEST_SANDBOX_ZYGOTE"] = "0" if kind == "oneshot" else "1"
                r = run_drive(args.drive, [path], menv, extra + SLOW_LIMITS)[0]
                fail = fail or judge("same_" + n, r, {"OK"}, None, lis)
                out = [f for f in r.get("frames", []) if f.get("type") == 0x83]
                outs[kind] = (out[0].get("body_fnv"), out[0].get("body_len")) if out else None
            if not fail and (len(set(outs.values())) != 1 or outs["small"][1] != 8 * 100):
                fail = "outputs differ between zygotes: %s" % outs
            results.append(("zygote", "zygote_kinds_identical_" + n, fail is None, fail or "", 0))
    # side effects
    time.sleep(0.2)
    results.append(("harness", "no_connection_arrived", not lis.hits, "hits: %s" % lis.hits, 0))
    after = {p: sha(p) for p in before}
    results.append(("harness", "canaries_unchanged", after == before, "changed: %s" % [p for p in before if before[p] != after[p]], 0))
    for name, ok, detail in helper_table(args.helper, args.prog, tmpdir):
        results.append(("helper", name, ok, "" if ok else detail, 0))
    # JUnit
    suite = ET.Element("testsuite", name="sandbox-corpus", tests=str(len(results)),
                       failures=str(sum(1 for r in results if not r[2])))
    for mode, name, ok, detail, dt in results:
        tc = ET.SubElement(suite, "testcase", classname="sandbox." + mode, name=name, time="%.3f" % dt)
        if not ok:
            ET.SubElement(tc, "failure", message=detail[:2000])
    ET.ElementTree(suite).write(args.junit, encoding="utf-8", xml_declaration=True)
    bad = [r for r in results if not r[2]]
    for mode, name, ok, detail, dt in results:
        print("%-4s %-8s %-24s %s" % ("ok" if ok else "FAIL", mode, name, "" if ok else detail[:400]))
    print("%d cases, %d failed" % (len(results), len(bad)))
    subprocess.run(["rm", "-rf", tmpdir])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
