"""GET/POST/DELETE /api/anthropic-key (issue 16): the original's validation
and mask, one key per owner on the secret store with an admin-set default,
never returned whole, never logged, not readable by another user, and
encrypted at rest: the secrets row holds a ciphertext, never the key."""
from helpers import stack_sql
from runs_helpers import REMOTE, Api

KEY = "sk-ant-api03-" + "Ab1_-" * 12 + "wxyz"
DEFAULT = "sk-ant-admin-default-" + "q" * 30 + "9876"


def masked(k):
    return k[:8] + "..." + k[-4:]


def test_anthropic_key_per_owner_with_admin_default(stack):
    admin = Api(stack, stack.create_token(role="admin"))
    alice = Api(stack, stack.create_token(role="user"))
    bob = Api(stack, stack.create_token(role="user"))
    admin.req("DELETE", "/api/anthropic-key?default=1")
    none = {"set": False, "masked": None, "source": None}
    assert alice.get("/api/anthropic-key").json() == none
    for bad in ("", "sk-ant-", "sk-xyz-123456789", "sk-ant-has space", "sk-ant-semi;colon", "sk-ant-dot.ted",
                "sk-ant-" + "x" * 250, "SK-ANT-abcdef"):
        r = alice.post("/api/anthropic-key", {"key": bad})
        assert r.status == 400 and r.json()["code"] == "invalid_field", (bad, r)
    assert alice.post("/api/anthropic-key", {}).json()["code"] == "missing_field"
    assert alice.post("/api/anthropic-key", {"key": KEY, "x": 1}).status == 400
    assert alice.post("/api/anthropic-key", {"key": KEY, "default": "yes"}).status == 400
    r = alice.post("/api/anthropic-key", {"key": KEY, "default": True})
    assert r.status == 403 and r.json()["code"] == "forbidden"
    r = alice.post("/api/anthropic-key", {"key": KEY})
    assert r.status == 200 and r.json() == {"set": True, "masked": masked(KEY), "source": "own"}, r
    assert bob.get("/api/anthropic-key").json() == none           # not another user's key
    # at rest: one more sealed row (24-byte nonce, the key's length + the 16-byte tag), no plaintext in it
    hexkey = KEY.encode().hex()
    rows = stack_sql(stack, "SELECT LENGTH(nonce), LENGTH(ciphertext), LOCATE(UNHEX('%s'), ciphertext) "
                            "FROM secrets WHERE kind = 'anthropic' AND owner_id <> 0" % hexkey)
    assert ["24", str(len(KEY) + 16), "0"] in rows, rows
    assert all(r[2] == "0" for r in rows), rows
    r = admin.post("/api/anthropic-key", {"key": DEFAULT, "default": True})
    assert r.status == 200 and r.json() == {"set": True, "masked": masked(DEFAULT), "source": "default"}, r
    assert bob.get("/api/anthropic-key").json() == {"set": True, "masked": masked(DEFAULT), "source": "default"}
    assert alice.get("/api/anthropic-key").json()["source"] == "own"
    short = "sk-ant-abcdefgh"
    assert bob.post("/api/anthropic-key", {"key": short}).json()["masked"] == "***"
    assert bob.req("DELETE", "/api/anthropic-key?default=1").status == 403
    assert bob.req("DELETE", "/api/anthropic-key?default=2").status == 400
    r = alice.req("DELETE", "/api/anthropic-key")
    assert r.status == 200 and r.json()["source"] == "default"    # her own is gone, the default applies
    r = admin.req("DELETE", "/api/anthropic-key?default=1")
    assert r.status == 200
    assert alice.get("/api/anthropic-key").json() == none
    assert stack.request("GET", "/api/anthropic-key", source=REMOTE).status == 401
    for f in (stack.var / "log").glob("*.log"):
        text = f.read_text(errors="replace")
        assert KEY not in text and DEFAULT not in text, f
