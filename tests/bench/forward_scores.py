"""Part 2 of tests/bench/paper.sh: forward-scoring N evaluations
after one new hour of data (usage: forward_scores.py N DAYS_BACK)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "e2e"), str(HERE)]
from conftest import Stack  # noqa: E402  (the e2e tests' private stack)
from run_cost import cpu_of, stack_sessions  # noqa: E402
from runs_helpers import Api  # noqa: E402
from test_challenges import MOMENTUM, wait_done  # noqa: E402
from test_data_cache import _standin, _standin_post, _wait_prefetch  # noqa: E402

N, DAYS_BACK = int(sys.argv[1]), float(sys.argv[2])


def prefetch(admin):
    r = admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": ["ETH"]})
    assert r.status == 202, r
    done = _wait_prefetch(admin, 60, timeout=600)
    assert done["status"] == "completed", done
    return done


def sql(stack, q):
    """One query on the stack's MariaDB (the mariadb client, as scripts/lib/stack-mariadb.sh connects)."""
    r = subprocess.run(["mariadb", "--no-defaults", "--protocol=socket", "--socket=%s" % (stack.var / "run" / "mysqld.sock"),
                        "-u", os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True,
                                                                         text=True).stdout.strip(),
                        "-N", "-B", "agenttest", "-e", q], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def wait_forward(api, ids, version, timeout):
    """Seconds until every evaluation of ids shows a forward score on version."""
    t0, left = time.monotonic(), list(ids)
    while left and time.monotonic() - t0 < timeout:
        left = [i for i in left if (api.get("/api/evaluations/" + i).json().get("forward") or {})
                .get("dataset_version") != version]
        if left:
            time.sleep(0.2)
    assert not left, "%d evaluations without a forward score on %s" % (len(left), version)
    return time.monotonic() - t0


def main():
    si, base = _standin("--history-days", "%g" % (DAYS_BACK + 0.5), "--lag-minutes", "420")
    data = Path(tempfile.mkdtemp(prefix="agenttest-bench-forward-"))
    stack = Stack("bench-forward", {"MANTIS_DATA_DIR": str(data), "BINANCE_API_URL": base,
                                    "MANTIS_FETCH_BACKOFF_MS": 20}).start()
    try:
        admin = Api(stack, stack.create_token(role="admin"))
        prefetch(admin)
        users = [Api(stack, stack.create_token(role="user")) for _ in range(N)]
        ids = []
        t0 = time.monotonic()
        for k, u in enumerate(users):   # one owner each: an owner has one evaluation per challenge at a time
            code = MOMENTUM.replace("r * 300", "r * %d" % (200 + k))
            r = u.post("/api/evaluations", {"challenge": "ETH-1H-BINARY", "code": code, "days_back": DAYS_BACK,
                                            "holdout_days": 0.25, "dataset_version": "binance-1m-60d"})
            assert r.status == 202, r
            ids.append(r.json()["id"])
        for i in ids:
            e = wait_done(admin, i, timeout=1200)
            assert e["status"] == "completed", e
        print("%d evaluations (%g days of 1-minute bars each) completed in %.1f s"
              % (N, DAYS_BACK, time.monotonic() - t0), flush=True)
        _standin_post(base, "/admin/lag?minutes=120")   # 5 hours: the first forward scores
        v = prefetch(admin)
        wait_forward(admin, ids, v["dataset_version"], 1200)
        _standin_post(base, "/admin/lag?minutes=60")    # one new hour
        sessions = stack_sessions(str(stack.var / "run"))
        c0 = cpu_of(sessions)
        v = prefetch(admin)
        wall = wait_forward(admin, ids, v["dataset_version"], 1200)
        c1 = cpu_of(sessions)
        job = sql(stack, "SELECT CONCAT('runtime ', ROUND(j.runtime_s, 1), ' s, ', j.subjects, ' subjects, ', "
                  "j.scored, ' scored, ', j.skipped, ' skipped') FROM forward_jobs j JOIN datasets d ON "
                  "d.id = j.dataset_id WHERE d.version = '%s'" % v["dataset_version"])
        fwd = [admin.get("/api/evaluations/" + i).json()["forward"] for i in ids]
        numeric = sum(f["score"] is not None for f in fwd)
        user, sys_ = c1[0] - c0[0], c1[1] - c0[1]
        print("one new hour: %d forward scores (%d numeric, %d..%d forward bars) visible %.1f s after the label "
              "moved" % (len(fwd), numeric, min(f["bars"] for f in fwd), max(f["bars"] for f in fwd), wall))
        print("forward job: %s" % "; ".join(job.split("\n")))
        print("forward-scoring %d evaluations after one new hour of data: %.1f s wall (label moved -> last score "
              "visible), %.1f s CPU of the stack" % (N, wall, user + sys_))
        print("per evaluation: wall %.3f s, CPU %.3f s (user %.1f s + sys %.1f s over the batch, every process "
              "of the stack); load average %s" % (wall / N, (user + sys_) / N, user, sys_,
                                                  " ".join(open("/proc/loadavg").read().split()[:3])))
    finally:
        stack.stop()
        si.kill()
        si.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
