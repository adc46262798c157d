#!/usr/bin/python3
"""A local stand-in for the Anthropic Messages API (tests only).

Speaks the real wire protocol of the endpoints an agent CLI uses:

  POST /v1/messages               plain JSON, or server-sent events when the
                                  body has "stream": true (message_start,
                                  content_block_start / ping / content_block_delta
                                  (text_delta, input_json_delta) / content_block_stop,
                                  message_delta with usage, message_stop), sent
                                  with chunked transfer encoding, one event per
                                  chunk, as the real API does
  POST /v1/messages/count_tokens  {"input_tokens": N}
  anything else                   404 with an Anthropic-shaped error body

Scripted per test: --script FILE is a JSON object
  {"turns": [TURN, ...], "default": TURN?}
Each /v1/messages request takes the first unused turn whose "match" fits
(match keys, all optional: "tools": true|false = the request has a
non-empty tools list, "stream": true|false, "model_contains": "haiku");
a request no turn matches gets "default" (not consumed), or a 500 error
when there is none. A TURN is
  {"content": [{"type": "text", "text": "..."},
               {"type": "tool_use", "name": "Bash", "input": {...}}],
   "stop_reason": "end_turn"|"tool_use" (default: tool_use when a tool_use
                  block is present),
   "usage": {"input_tokens": N, "output_tokens": N,
             "cache_creation_input_tokens": N, "cache_read_input_tokens": N},
   "delay_s": seconds to wait between events (streaming) or before answering,
   "hold_until": a path: before answering, wait until that file exists (at
                 most 120 s), so a test decides when a held request ends}
or an error turn {"status": 429|529|400|..., "retry_after": seconds?,
"error_type": "rate_limit_error"?, "message": "..."}. A text may contain
{{N}}, replaced by the iteration number found in the request (the first
"iteration_<N>.py" in its text), so one script serves any iteration.

Every request is appended to --log FILE as one JSON line: method, path,
headers (all of them, as received: the tests use this to prove the upstream
sees the real key), the body parsed as JSON (or null), the turn index
served and the usage reported. --port 0 picks a free port; the port is
printed on stdout, then the server serves until killed.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}


class State:
    """The script, which turns are used, and the request log."""

    def __init__(self, script_path, log_path):
        with open(script_path) as f:
            script = json.load(f)
        self.turns = script.get("turns", [])
        self.default = script.get("default")
        self.used = [False] * len(self.turns)
        self.log_path = log_path
        self.lock = threading.Lock()

    def take(self, body):
        """The turn for a /v1/messages body: (index, turn); index -1 for the
        default, (None, None) when nothing fits."""
        with self.lock:
            for i, t in enumerate(self.turns):
                if not self.used[i] and matches(t.get("match", {}), body):
                    self.used[i] = True
                    return i, t
        if self.default is not None:
            return -1, self.default
        return None, None

    def record(self, entry):
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self.lock, open(self.log_path, "a") as f:
            f.write(line)


def matches(m, body):
    """Whether a request body fits a turn's match object."""
    if "tools" in m and bool(body.get("tools")) != bool(m["tools"]):
        return False
    if "stream" in m and bool(body.get("stream")) != bool(m["stream"]):
        return False
    if "model_contains" in m and m["model_contains"] not in str(body.get("model", "")):
        return False
    return True


def iteration_of(body):
    """The first iteration number named in a request ("iteration_<N>.py")."""
    found = re.search(r"iteration_(\d+)\.py", json.dumps(body))
    return found.group(1) if found else "1"


def fill(value, n):
    """Replace {{N}} in every string of a JSON value."""
    if isinstance(value, str):
        return value.replace("{{N}}", n)
    if isinstance(value, list):
        return [fill(v, n) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, n) for k, v in value.items()}
    return value


def full_usage(u):
    """A usage object with every field the API reports."""
    out = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
           "cache_read_input_tokens": 0}
    out.update(u or {})
    return out


def blocks_of(turn):
    """Content blocks with ids, tool inputs as objects."""
    out = []
    for b in turn.get("content", []):
        b = dict(b)
        if b["type"] == "tool_use":
            b.setdefault("id", "toolu_" + uuid.uuid4().hex[:24])
            b.setdefault("input", {})
        out.append(b)
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, status, obj, headers=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, etype, message, headers=()):
        self._send(status, {"type": "error", "error": {"type": etype, "message": message}}, headers)

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, name, obj, delay):
        if delay:
            time.sleep(delay)
        self._chunk(("event: %s\ndata: %s\n\n" % (name, json.dumps(obj))).encode())

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _entry(self, body):
        return {"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body, "time": time.time()}

    def do_GET(self):
        st = self.server.state
        st.record(self._entry(None))
        self._error(404, "not_found_error", "no such endpoint: GET %s" % self.path)

    def do_POST(self):
        st = self.server.state
        body = self._body()
        entry = self._entry(body)
        path = self.path.split("?", 1)[0]
        if body is None or not isinstance(body, dict):
            st.record(entry)
            return self._error(400, "invalid_request_error", "the body is not a JSON object")
        if path == "/v1/messages/count_tokens":
            n = max(1, len(json.dumps(body.get("messages", []))) // 4)
            entry["usage"] = {"input_tokens": n}
            st.record(entry)
            return self._send(200, {"input_tokens": n})
        if path != "/v1/messages":
            st.record(entry)
            return self._error(404, "not_found_error", "no such endpoint: POST %s" % path)
        idx, turn = st.take(body)
        entry["turn"] = idx
        if turn is None:
            st.record(entry)
            return self._error(500, "api_error", "the stand-in's script has no turn left for this request")
        if "status" in turn and turn["status"] != 200:
            st.record(entry)
            status = turn["status"]
            headers = [("retry-after", str(turn["retry_after"]))] if "retry_after" in turn else []
            return self._error(status, turn.get("error_type", ERROR_TYPES.get(status, "api_error")),
                               turn.get("message", "scripted error %d" % status), headers)
        turn = fill(turn, iteration_of(body))
        usage = full_usage(turn.get("usage"))
        entry["usage"] = usage
        st.record(entry)
        blocks = blocks_of(turn)
        stop = turn.get("stop_reason") or ("tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn")
        msg = {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
               "model": body.get("model", "claude-sonnet-4-5"), "stop_reason": None, "stop_sequence": None}
        delay = float(turn.get("delay_s", 0))
        if "hold_until" in turn:
            held = time.monotonic() + 120
            while not os.path.exists(turn["hold_until"]) and time.monotonic() < held:
                time.sleep(0.05)
        if not body.get("stream"):
            if delay:
                time.sleep(delay)
            return self._send(200, dict(msg, content=blocks, stop_reason=stop, usage=usage))
        self._stream(msg, blocks, stop, usage, delay)

    def _stream(self, msg, blocks, stop, usage, delay):
        """The SSE form: input and cache usage in message_start (output 1),
        the final output count in message_delta, as the API reports them."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        start_usage = dict(usage, output_tokens=1)
        self._event("message_start", {"type": "message_start", "message": dict(msg, content=[], usage=start_usage)}, 0)
        self._event("ping", {"type": "ping"}, 0)
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                self._event("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "text", "text": ""}}, delay)
                text = b["text"]
                for k in range(0, max(len(text), 1), 40):
                    self._event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                        "delta": {"type": "text_delta", "text": text[k:k + 40]}}, 0)
            else:
                self._event("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}, delay)
                js = json.dumps(b["input"])
                for k in range(0, len(js), 64):
                    self._event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                        "delta": {"type": "input_json_delta", "partial_json": js[k:k + 64]}}, 0)
            self._event("content_block_stop", {"type": "content_block_stop", "index": i}, 0)
        self._event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": usage["output_tokens"]}}, delay)
        self._event("message_stop", {"type": "message_stop"}, 0)
        self._chunk(b"")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    srv.state = State(a.script, a.log)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
