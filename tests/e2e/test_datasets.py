"""GET /datasets, GET /datasets/{version}, `agenttest dataset register`
(immutable labels), and runs failing on a dataset whose bytes changed."""
import json
import pathlib
import shutil

import pytest

from helpers import assert_error
from runs_helpers import Api, BUY_AND_HOLD


@pytest.fixture(scope="module")
def frank(stack):
    return Api(stack, stack.create_token(role="user"))


def test_list_and_detail(frank):
    body = frank.get("/datasets").json()
    versions = {d["version"]: d for d in body["datasets"]}
    assert body["default_version"] == "synth-v1"
    assert {"synth-v1", "v1"} <= set(versions)
    s = versions["synth-v1"]
    assert len(s["dataset_hash"]) == 64 and s["interval_ms"] == 60000 and s["bars"] == 10080
    assert "BTC" in s["assets"] and len(s["assets"]) == 29
    detail = frank.get("/datasets/v1").json()
    assert detail["bars"] == 5 and detail["assets"] == ["PRICE"]
    assert_error(frank.get("/datasets/nope"), 404, "not_found")


def test_label_is_immutable(stack, tmp_path):
    d = tmp_path / "other"
    d.mkdir()
    (d / "prices.csv").write_text("ts,price\n1,100\n2,99\n3,98\n")
    r = stack.cli("dataset", "register", str(d), "--version", "v1", check=False)
    assert r.returncode == 1
    assert json.loads(r.stderr.strip().splitlines()[-1])["code"] == "conflict"
    ok = stack.cli("dataset", "register", str(d), "--version", "other-v1")
    assert json.loads(ok.stdout)["created"] is True
    again = stack.cli("dataset", "register", str(d), "--version", "other-v1")
    assert json.loads(again.stdout)["created"] is False


def test_changed_dataset_fails_runs_with_a_clear_code(stack, frank, tmp_path):
    d = tmp_path / "mutable"
    d.mkdir()
    (d / "prices.csv").write_text("ts,price\n1,100\n2,101\n3,102\n")
    stack.cli("dataset", "register", str(d), "--version", "mutable-v1")
    v = frank.submit(BUY_AND_HOLD, "on-mutable")["strategy_version_id"]
    assert frank.run(v, dataset_version="mutable-v1")["status"] == "completed"
    (d / "prices.csv").write_text("ts,price\n1,100\n2,150\n3,200\n")
    # the runner re-verifies a dataset whose file changed identity, size or mtime
    run = frank.run(v, dataset_version="mutable-v1")
    assert run["status"] == "failed"
    assert run["error"]["code"] == "dataset_mismatch", run["error"]
    shutil.rmtree(d)
    run = frank.run(v, dataset_version="mutable-v1")
    assert run["status"] == "failed" and run["error"]["code"] in ("dataset_error", "dataset_mismatch")


def test_dataset_dir_workers_and_inert_keys_at_start(stack_factory, tmp_path):
    """DATASET_DIR is registered under DATASET_VERSION at start (no synthetic
    market is made), MANTIS_WORKERS sizes the pool, and MANTIS_MAX_AGENTS
    (effective since issue 15) is neither unknown nor inert."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "prices.csv").write_text("ts,price\n1,10\n2,11\n3,12\n4,13\n")
    with stack_factory.fresh("datasetdir", DATASET_DIR=d, DATASET_VERSION="mine-v1",
                             AGENTTEST_WORKERS="", MANTIS_WORKERS=3, MANTIS_MAX_AGENTS=2) as s:
        api = Api(s, s.create_token(role="user"))
        body = api.get("/datasets").json()
        versions = {x["version"]: x for x in body["datasets"]}
        assert body["default_version"] == "mine-v1"
        assert versions["mine-v1"]["bars"] == 4 and "synth-v1" not in versions
        assert not (s.var / "data" / "mine-v1").exists()
        v = api.submit(BUY_AND_HOLD, "on-mine")["strategy_version_id"]
        run = api.run(v)
        assert run["status"] == "completed" and run["dataset_version"] == "mine-v1"
        master = int((s.var / "run" / "pool.pid").read_text().split()[0])
        kids = [p for p in (pathlib.Path("/proc")).iterdir() if p.name.isdigit()
                and _ppid(p) == master]
        assert len(kids) == 3
        log = (s.var / "log" / "pool.log").read_text()
        assert "MANTIS_MAX_AGENTS" not in log


def _ppid(p):
    try:
        return int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1
