"""A request whose transaction loses a deadlock is run again by the pool,
not answered with a 500 (the CI failure of session 3: an agent's pause met
the runner's transaction on the same rows). The test builds the deadlock
deterministically with its own MariaDB session: it holds the agent's
iteration rows, waits until the pool's pause transaction (which locked the
agent row first) waits for them, then asks for the agent row itself. InnoDB
rolls back the lighter transaction, which is the pool's (the test's has
changed thousands of rows), so the pool sees a deadlock; it must answer the
pause correctly once the test lets go, and log the conflict it survived."""
import subprocess
import threading
import time
import urllib.parse

import pytest

GOAL = "find the 1-hour momentum effect on ETH"


@pytest.fixture(scope="module")
def cstack(stack_factory):
    # no runner slots: the agent's iteration stays queued, nothing else locks its rows
    return stack_factory("db-conflict", AGENTTEST_RUNNER_SLOTS=0)


class Session:
    """One interactive MariaDB client session on the stack's socket."""

    def __init__(self, s):
        url = urllib.parse.urlsplit(s.read_env()["DATABASE_URL"])
        sock = urllib.parse.parse_qs(url.query)["socket"][0]
        self.p = subprocess.Popen(["mariadb", f"--socket={sock}", f"--user={url.username}", "-N", "-B",
                                   "--unbuffered", url.path.lstrip("/")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)

    def run(self, sql):
        """Run statements and return the output lines before a marker."""
        self.p.stdin.write(sql.rstrip().rstrip(";") + ";\nSELECT 'END-OF-STATEMENTS';\n")
        self.p.stdin.flush()
        out = []
        for line in self.p.stdout:
            if line.strip() == "END-OF-STATEMENTS":
                return out
            out.append(line.rstrip("\n"))
        raise AssertionError(f"mariadb client ended: {out}")

    def send(self, sql):
        """Start statements without waiting for them (they may block on a lock)."""
        self.p.stdin.write(sql.rstrip().rstrip(";") + ";\nDO 0;\n")
        self.p.stdin.flush()

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def test_pause_survives_a_deadlock_with_concurrent_work(cstack):
    tok = cstack.create_token(role="user")
    r = cstack.request("POST", "/api/agents", token=tok, json_body={
        "challenge": "ETH-1H-BINARY", "goal": GOAL, "min_iterations": 1, "max_iterations": 2})
    assert r.status == 201, r
    aid = r.json()["id"]
    holder, watcher = Session(cstack), Session(cstack)
    try:
        holder.run("CREATE TABLE IF NOT EXISTS conflict_ballast (id INT PRIMARY KEY) ENGINE=InnoDB")
        holder.run("START TRANSACTION; INSERT INTO conflict_ballast SELECT seq FROM seq_1_to_5000; "
                   f"UPDATE agent_iterations SET goal_version = goal_version WHERE agent_id = '{aid}'")
        answer = {}
        t = threading.Thread(target=lambda: answer.update(
            r=cstack.request("POST", f"/api/agents/{aid}/pause", token=tok, json_body={}, timeout=120)))
        t.start()
        # the pool's transaction holds the agent row and waits for the iteration rows. It is found in the
        # process list, not in INNODB_TRX: MariaDB 10.11 does not always list a waiting transaction there
        # (seen on two machines: only the holder's row while the pool's DELETE waited). The pause waits
        # either in its locking read of the agent (whose active-iteration subquery InnoDB may lock too) or
        # in its DELETE of the queued iteration; a statement still there after 0.5 s is waiting, not running
        mine = ",".join(x for s in (holder, watcher) for x in s.run("SELECT CONNECTION_ID()"))
        probe = ("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Query', 'Execute') "
                 f"AND ID NOT IN ({mine}) AND (INFO LIKE 'DELETE FROM agent_iterations%' "
                 "OR INFO LIKE 'SELECT id, owner_id, status, paused_at%FOR UPDATE')")
        deadline = time.monotonic() + 120
        seen, since = None, 0.0
        while time.monotonic() < deadline:
            waiting = watcher.run(probe)
            if len(waiting) == 1 and waiting == seen:
                if time.monotonic() - since >= 0.5:
                    break
            else:
                seen, since = waiting, time.monotonic()
            time.sleep(0.05)
        else:
            raise AssertionError("the pause never waited for the iteration rows\n" + "\n".join(watcher.run(
                "SELECT ID, COMMAND, STATE, INFO FROM information_schema.PROCESSLIST")) + "\n" + cstack.log_tail(40))
        # now close the cycle: the lighter transaction (the pool's) is the deadlock victim
        holder.send(f"SELECT id FROM agents WHERE id = '{aid}' FOR UPDATE")
        while time.monotonic() < deadline and "db_conflict" not in cstack.log_tail(200):
            time.sleep(0.05)
        holder.run("ROLLBACK")
        t.join(60)
        assert not t.is_alive()
        r = answer["r"]
        assert r.status == 200 and r.json() == {"paused": True}, r
        assert "db_conflict" in cstack.log_tail(200), cstack.log_tail(40)
        d = cstack.get(f"/api/agents/{aid}", token=tok).json()
        assert d["paused"] is True and d["status"] == "paused"
    finally:
        holder.close()
        watcher.close()
