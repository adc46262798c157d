#!/usr/bin/python3
"""A local stand-in for Binance's public REST API (tests and benchmarks only).

Speaks the real protocol for GET /api/v3/ping ({}) and GET /api/v3/klines
(symbol, interval, startTime, endTime, limit <= 1000; rows are
[open_time, "open", "high", "low", "close", "volume", close_time,
"quote", trades, "taker_base", "taker_quote", "0"], the last one possibly
the still-open candle). Candles are a deterministic function of (symbol,
open time), so two fetches of the same range give the same bytes.

Faults (for the fetcher's tests), given as --faults a,b,c: each one is
applied once, to the klines requests that come after --fault-after
requests, one every --fault-every requests, in order: 429 (with Retry-After: 1), 418 (Retry-After: 1), 500,
502, slow (answers after --slow-s seconds), dup (the page starts one candle
before startTime: it repeats the last candle of the page before), empty ([]), nonlist
({"code":-1003,...} with status 200), badjson, tick (the server's clock moves one
minute forward before the request is answered: a minute that passes between two
pages of a fetch). --forever STATUS answers
every klines request with that status (429 comes with Retry-After: 1;
--no-retry-after: 429 and 418 come without it).
--gap-symbol SYM: SYM has no candle in minutes 500..509 of every 1000.
--history-days D: no candle older than D days before the server's clock at
its start (a recent listing; keeps fetches of a long window short). Lowering
the lag moves that oldest candle on by as much as the newest (a moving window
for the tests of versions that start at later bars); the wall clock moving
on does not: it only closes new candles, as at Binance, so every fetch that
ends at a given candle gets the same candles, whenever its pages came. (An
oldest candle that slid with the wall clock gave a fetch whose pages
straddled a minute one candle more than a later fetch ending at the same
candle: the same version label with another hash, a prefetch `conflict`.)
--clock-ms MS: the server's wall clock stands at MS (ms since the epoch) and
moves only by tick faults, so a test decides where the minute boundaries fall.
--lag-minutes L: the server's clock is L minutes behind (no candle newer);
POST /admin/lag?minutes=L changes it. POST /admin/faults?list=a,b queues
more faults (served to the next klines requests). POST
/admin/gap?symbol=SYM&from=MS&to=MS: SYM has no candle with an open time in
[from, to] (a gap on demand, for paper trading). GET /admin/stats: counts, each klines request's
[symbol, client port, arrival time] and the most served at once.
--ping-status S: GET /api/v3/ping answers S (default 200; the base-URL
fallback tests). POST /admin/hold?symbols=A,B: klines requests for those
symbols wait (up to 60 s) until POST /admin/release?symbols=A (or with no
symbols: all), so a test can look at a fetch mid-way.
Prints the port on stdout, then serves until killed.
"""
import argparse
import json
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

INTERVALS = {"1m": 60000, "5m": 300000, "1h": 3600000, "1d": 86400000}


def candle(sym, t, ival):
    """Deterministic OHLCV for symbol sym at open time t (ms)."""
    base = 1.0 + (zlib.crc32(sym.encode()) % 50000) / 10.0
    k = t // ival
    h = zlib.crc32(b"%s:%d" % (sym.encode(), k))
    o = base * (1.0 + ((h & 0xFFFF) - 32768) / 3276800.0)
    c = base * (1.0 + (((h >> 16) & 0xFFFF) - 32768) / 3276800.0)
    hi = max(o, c) * 1.0005
    lo = min(o, c) * 0.9995
    vol = (h % 1000) / 10.0
    return [t, "%.8f" % o, "%.8f" % hi, "%.8f" % lo, "%.8f" % c, "%.4f" % vol, t + ival - 1,
            "%.4f" % (vol * c), int(h % 500), "%.4f" % (vol / 2), "%.4f" % (vol * c / 2), "0"]


class State:
    def __init__(self, args):
        self.args = args
        self.faults = [f for f in args.faults.split(",") if f]
        self.lag_ms = args.lag_minutes * 60000
        self.ticks_ms = 0   # tick faults served: the minutes they moved the clock
        self.start_ms = self.wall_ms()   # the wall clock at the start (the listing's age counts from it)
        self.gaps = []   # (symbol, from_ms, to_ms) of POST /admin/gap
        self.holds = {}  # symbol -> threading.Event set on release (POST /admin/hold)
        self.lock = threading.Lock()
        self.in_flight = 0
        # pages: [symbol, client port, arrival time] of every klines request (connection
        # reuse, pacing); max_in_flight: most klines requests served at once (parallelism)
        self.stats = {"klines": 0, "ping": 0, "faults_served": [], "statuses": {}, "pages": [],
                      "max_in_flight": 0}

    def wall_ms(self):
        """The server's wall clock (ms): the real one, or --clock-ms; moved by tick faults."""
        base = self.args.clock_ms if self.args.clock_ms is not None else int(time.time() * 1000)
        return base + self.ticks_ms


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body, headers=()):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # a client that timed out
            self.close_connection = True
        st = self.server.state
        with st.lock:
            st.stats["statuses"][str(status)] = st.stats["statuses"].get(str(status), 0) + 1

    def do_POST(self):
        u = urlparse(self.path)
        st = self.server.state
        if u.path == "/admin/lag":
            st.lag_ms = int(parse_qs(u.query)["minutes"][0]) * 60000
            return self.reply(200, "{}")
        if u.path == "/admin/gap":
            q = parse_qs(u.query)
            with st.lock:
                st.gaps.append((q["symbol"][0], int(q["from"][0]), int(q["to"][0])))
            return self.reply(200, "{}")
        if u.path in ("/admin/hold", "/admin/release"):
            syms = [x for x in parse_qs(u.query).get("symbols", [""])[0].split(",") if x]
            with st.lock:
                if u.path == "/admin/hold":
                    for x in syms:
                        st.holds[x] = threading.Event()
                else:
                    for x in syms or list(st.holds):
                        ev = st.holds.pop(x, None)
                        if ev:
                            ev.set()
            return self.reply(200, "{}")
        if u.path == "/admin/faults":
            with st.lock:
                st.faults += [f for f in parse_qs(u.query)["list"][0].split(",") if f]
                st.args.fault_after = min(st.args.fault_after, st.stats["klines"])
                st.args.fault_every = 1
            return self.reply(200, "{}")
        self.reply(404, '{"code":-1,"msg":"not found"}')

    def do_GET(self):
        u = urlparse(self.path)
        st = self.server.state
        if u.path == "/api/v3/ping":
            with st.lock:
                st.stats["ping"] += 1
            if st.args.ping_status != 200:
                return self.reply(st.args.ping_status, '{"code":-1000,"msg":"unavailable"}')
            return self.reply(200, "{}")
        if u.path == "/admin/stats":
            with st.lock:
                body = json.dumps(st.stats)
            return self.reply(200, body)
        if u.path != "/api/v3/klines":
            return self.reply(404, '{"code":-1,"msg":"not found"}')
        with st.lock:
            st.in_flight += 1
            st.stats["max_in_flight"] = max(st.stats["max_in_flight"], st.in_flight)
            st.stats["pages"].append([parse_qs(u.query).get("symbol", [""])[0], self.client_address[1], time.time()])
        try:
            return self.klines(u, st)
        finally:
            with st.lock:
                st.in_flight -= 1

    def klines(self, u, st):
        """Answer one GET /api/v3/klines (faults first)."""
        with st.lock:
            st.stats["klines"] += 1
            n = st.stats["klines"]
            fault = None
            if st.args.forever:
                fault = st.args.forever
            elif n > st.args.fault_after and st.faults and (n - st.args.fault_after - 1) % st.args.fault_every == 0:
                fault = st.faults.pop(0)
                st.stats["faults_served"].append(fault)
            if fault == "tick":
                st.ticks_ms += 60000
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        with st.lock:
            hold = st.holds.get(q.get("symbol", ""))
        if hold:
            hold.wait(60)
        if fault in ("429", "418"):
            ra = [] if st.args.no_retry_after else [("Retry-After", "1")]
            return self.reply(int(fault), '{"code":-1003,"msg":"Too many requests"}', ra)
        if fault and fault.isdigit():
            return self.reply(int(fault), '{"code":-1000,"msg":"internal"}')
        if fault == "nonlist":
            return self.reply(200, '{"code":-1003,"msg":"Way too much request weight used"}')
        if fault == "badjson":
            return self.reply(200, '[[1,"2"')
        if fault == "empty":
            return self.reply(200, "[]")
        if fault == "slow":
            time.sleep(st.args.slow_s)
        sym = q.get("symbol", "")
        ival = INTERVALS.get(q.get("interval", ""))
        if fault == "dup" and ival is not None and "startTime" in q:
            q["startTime"] = str(int(q["startTime"]) - ival)   # the page repeats the candle before it
        if not sym.endswith("USDT") or ival is None:
            return self.reply(400, '{"code":-1121,"msg":"Invalid symbol."}')
        limit = min(int(q.get("limit", 500)), 1000)
        now = st.wall_ms() - st.lag_ms
        start = int(q.get("startTime", 0))
        end = min(int(q.get("endTime", now)), now)
        if st.args.history_days:
            start = max(start, st.start_ms - st.lag_ms - int(st.args.history_days * 86400000))
        t = -(-start // ival) * ival
        rows = []
        while t <= end and len(rows) < limit:
            m = (t // ival) % 1000
            hidden = any(g[0] == sym and g[1] <= t <= g[2] for g in st.gaps)
            if not hidden and not (sym == st.args.gap_symbol and 500 <= m < 510):
                rows.append(candle(sym, t, ival))
            t += ival
        self.reply(200, json.dumps(rows, separators=(",", ":")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--faults", default="")
    ap.add_argument("--fault-after", type=int, default=0)
    ap.add_argument("--fault-every", type=int, default=1)
    ap.add_argument("--forever", default="")
    ap.add_argument("--slow-s", type=float, default=2.0)
    ap.add_argument("--gap-symbol", default="")
    ap.add_argument("--lag-minutes", type=int, default=0)
    ap.add_argument("--clock-ms", type=int, default=None)
    ap.add_argument("--history-days", type=float, default=0)
    ap.add_argument("--ping-status", type=int, default=200)
    ap.add_argument("--no-retry-after", action="store_true")
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.state = State(args)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
