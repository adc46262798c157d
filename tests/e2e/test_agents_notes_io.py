"""An agent's notes.txt and STATE.md travel in its export bundle
(mantis-agent-export-v1 `notes`, `state_md`) and an import restores them,
so an imported agent's detail page shows them (issue 17; docs/agents.md).
Bad values are 400 invalid_field naming the member, nothing created."""
import pytest

from helpers import assert_error

NOTES = "iteration 2: ret_60 carries the signal\nvolume adds noise\n"
STATE = "# State\n\n- best so far: iteration 2 (dev AUC 0.61)\n- next: try rsi_14\n"


@pytest.fixture(scope="module")
def astack(stack_factory):
    # the same variant as test_agents_api.py: no runner slots, nothing runs
    return stack_factory("agents-api", MANTIS_MAX_AGENTS=3, AGENTTEST_RUNNER_SLOTS=0)


def post(s, path, tok, body):
    return s.request("POST", path, token=tok, json_body=body)


def bundle(**top):
    b = {"format": "mantis-agent-export-v1", "exported_at": "2026-01-01T00:00:00Z",
         "agent": {"config": {"challenge": "ETH-1H-BINARY", "goal": "notes travel", "max_iterations": 2},
                   "iterations": [{"iteration": 1, "metrics": {"mean_auc": 0.55}}]},
         "code": {"1": "x = 1\n"}}
    b.update(top)
    return b


def texts(s, tok, aid):
    return (s.get(f"/api/agents/{aid}/notes", token=tok).json()["content"],
            s.get(f"/api/agents/{aid}/state", token=tok).json()["content"])


def test_notes_and_state_round_trip(astack):
    tok = astack.create_token(role="user")
    imp = post(astack, "/api/agents/import", tok, bundle(notes=NOTES, state_md=STATE))
    assert imp.status == 201, imp
    aid = imp.json()["id"]
    assert texts(astack, tok, aid) == (NOTES, STATE)
    ex = astack.get(f"/api/agents/{aid}/export", token=tok).json()
    assert ex["notes"] == NOTES and ex["state_md"] == STATE
    again = post(astack, "/api/agents/import", tok, ex)
    assert again.status == 201, again
    assert texts(astack, tok, again.json()["id"]) == (NOTES, STATE)
    # a bundle without them (older exports) imports with both empty, and exports them as ""
    bare = post(astack, "/api/agents/import", tok, bundle(notes=None))
    assert bare.status == 201 and texts(astack, tok, bare.json()["id"]) == ("", "")
    ex = astack.get(f"/api/agents/{bare.json()['id']}/export", token=tok).json()
    assert ex["notes"] == "" and ex["state_md"] == ""


def test_bad_notes_are_refused(astack):
    tok = astack.create_token(role="user")
    for top, name in (({"notes": 5}, "notes"), ({"state_md": ["x"]}, "state_md"),
                      ({"notes": "a\u0000b"}, "notes")):
        e = assert_error(post(astack, "/api/agents/import", tok, bundle(**top)), 400, "invalid_field")
        assert name in e["error"], e
    assert astack.get("/api/agents", token=tok).json() == []
