#!/usr/bin/python3
"""A local stand-in for the CoinGlass v4 REST API (tests only).

Speaks the real protocol for the four endpoints the fetcher uses
(spec/mantis.md §4.3): every request must carry the header CG-API-KEY
equal to --key (else HTTP 401); answers are the envelope
{"code":"0","msg":"success","data":[rows]}, rows in time order with
"time" (ms, the candle's open time) and the endpoint's value fields;
query parameters symbol, interval (1h, 1d), limit (<= 1000), start_time,
end_time (ms, inclusive). Pagination as the API does it: at most `limit`
rows from the first candle at or after start_time. The still-open candle
is included, as the real API does.

Values are a deterministic function of (endpoint, symbol, candle index),
see the value functions below (tests recompute them). Funding rates are
exactly 0 at every 5th hour of a symbol and null (missing) at every 13th.

--history-days D: no candle older than D days. --no-missing: no null
funding rate (FUNDING-XSEC needs every asset's funding at every row). --faults a,b: served once
each, in order, to the next requests: 429 (HTTP 429, Retry-After: 1), 500,
code (HTTP 200, {"code":"50001","msg":"Too Many Requests","data":null}).
--forever FAULT: every request gets FAULT. POST /admin/forever?fault=F
sets it (empty: none). GET /admin/stats: counts of requests, bad keys and
faults served, and "log": [endpoint kind, symbol, interval, start_time]
of every request served data (after the key and fault checks). Prints the port, then serves.
"""
import argparse
import json
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

INTERVALS = {"1h": 3600000, "1d": 86400000}
PATHS = {
    "/api/futures/open-interest/aggregated-history": "oi",
    "/api/futures/funding-rate/history": "funding",
    "/api/futures/liquidation/aggregated-history": "liq",
    "/api/futures/global-long-short-account-ratio/history": "ls",
}


def funding(sym, k):
    """Funding close of candle index k (hours since the epoch): 0 every 5th, None every 13th."""
    h = zlib.crc32(sym.encode())
    if (k + h) % 13 == 0:
        return None
    if (k + h) % 5 == 0:
        return 0.0
    return ((k + h) % 9 - 4) * 1e-5


def oi(sym, k):
    return 1e9 + (zlib.crc32(sym.encode()) % 1000) * 1e6 + k % 1000 * 1000.0


def liq(sym, k):
    h = zlib.crc32(b"%s:%d" % (sym.encode(), k))
    return float(h % 100000), float((h >> 8) % 100000)


def ls(sym, k):
    return 0.5 + (zlib.crc32(b"%s:%d" % (sym.encode(), k)) % 1000) / 1000.0


def row(kind, sym, t, ival, no_missing=False):
    k = t // ival
    if kind == "funding":
        c = funding(sym, k)
        if c is None and no_missing:
            c = 1e-6
        s = None if c is None else "%.8f" % c
        return {"time": t, "open": s, "high": s, "low": s, "close": s}
    if kind == "oi":
        c = "%.2f" % oi(sym, k)
        return {"time": t, "open": c, "high": c, "low": c, "close": c}
    if kind == "liq":
        lo, sh = liq(sym, k)
        return {"time": t, "aggregated_long_liquidation_usd": lo, "aggregated_short_liquidation_usd": sh}
    return {"time": t, "global_account_long_percent": 50.0, "global_account_short_percent": 50.0,
            "global_account_long_short_ratio": ls(sym, k)}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body, headers=()):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        u = urlparse(self.path)
        if u.path != "/admin/forever":
            return self.reply(404, '{"code":"404","msg":"not found","data":null}')
        with self.server.state.lock:
            self.server.state.args.forever = parse_qs(u.query).get("fault", [""])[0]
        self.reply(200, "{}")

    def do_GET(self):
        u = urlparse(self.path)
        st = self.server.state
        if u.path == "/admin/stats":
            with st.lock:
                return self.reply(200, json.dumps(st.stats))
        kind = PATHS.get(u.path)
        if kind is None:
            return self.reply(404, '{"code":"404","msg":"not found","data":null}')
        with st.lock:
            st.stats["requests"] += 1
            if self.headers.get("CG-API-KEY") != st.args.key:
                st.stats["bad_key"] += 1
                return self.reply(401, '{"code":"30001","msg":"API key missing or invalid","data":null}')
            fault = st.args.forever or (st.faults.pop(0) if st.faults else None)
            if fault:
                st.stats["faults_served"].append(fault)
        if fault == "429":
            return self.reply(429, '{"code":"429","msg":"Too Many Requests","data":null}', [("Retry-After", "1")])
        if fault == "500":
            return self.reply(500, '{"code":"500","msg":"internal","data":null}')
        if fault == "code":
            return self.reply(200, '{"code":"50001","msg":"Too Many Requests","data":null}')
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        with st.lock:
            st.stats["log"].append([kind, q.get("symbol", ""), q.get("interval", ""), int(q.get("start_time", 0))])
        sym, ival = q.get("symbol", ""), INTERVALS.get(q.get("interval", ""))
        usdt = kind in ("funding", "ls")
        if ival is None or not sym or sym.endswith("USDT") != usdt:
            return self.reply(200, '{"code":"400","msg":"invalid symbol or interval","data":null}')
        now = int(time.time() * 1000)
        start, end = int(q.get("start_time", 0)), min(int(q.get("end_time", now)), now)
        if st.args.history_days:
            start = max(start, now - int(st.args.history_days * 86400000))
        limit = min(int(q.get("limit", 1000)), 1000)
        t, rows = -(-start // ival) * ival, []
        while t <= end and len(rows) < limit:
            rows.append(row(kind, sym, t, ival, st.args.no_missing))
            t += ival
        self.reply(200, json.dumps({"code": "0", "msg": "success", "data": rows}, separators=(",", ":")))


class State:
    def __init__(self, args):
        self.args = args
        self.faults = [f for f in args.faults.split(",") if f]
        self.lock = threading.Lock()
        self.stats = {"requests": 0, "bad_key": 0, "faults_served": [], "log": []}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--key", required=True)
    ap.add_argument("--faults", default="")
    ap.add_argument("--forever", default="")
    ap.add_argument("--history-days", type=float, default=0)
    ap.add_argument("--no-missing", action="store_true")
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.state = State(args)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
