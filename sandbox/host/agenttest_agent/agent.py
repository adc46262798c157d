"""One turn of the built-in research agent (driver `builtin`).

Theory of operation. The agent is a process that runs inside the agent
sandbox with the workspace as its only writable directory and the dev part
of the market as its only data ($DATASET_DIR). A turn is one iteration:

  1. read GOAL.md, INBOX.md (steering, see steer.py), HISTORY.md (whether the
     trusted dev scoring of earlier iterations succeeded) and its memory in
     STATE.md (a fenced JSON block it wrote itself; absent = a fresh start);
  2. write notes.txt first (what it is about to try), as the contract asks;
  3. research: on the first turn screen every allowed feature (correlation
     with the target, p-value), then validate a few starting sets; on later
     turns generate moves from the best set so far (add the next screened
     feature, drop one, retune a window, change the regularisation, and the
     challenge's own knobs), validate up to MOVES of them chosen with a
     seeded generator, and keep the best only if it improves the walk-forward
     metric (research.validate);
  4. fit the best set on the whole dev part, write iteration_N.py,
     iteration_N_analysis.json (the original's schema), append to notes.txt
     and rewrite STATE.md.

Everything is deterministic given the seed, the data and the messages.
`done` is set once MAX_STALL turns in a row found no improvement (or an
operator asked it to stop); the loop honours it only after min_iterations.
"""
import json
import math
import os
import random
import re
import sys
import time

import numpy as np

from agenttest.data import DataProvider
from agenttest.evaluator import challenges

from . import features as F
from . import research as R
from . import steer
from .codegen import strategy_source

MOVES = 5
MAX_STALL = 2
MIN_GAIN = 5e-4
STATE_RE = re.compile(r"```json agent-state\n(.*?)\n```", re.S)


def log(msg):
    """An activity line on stdout (the loop shows the last ones live)."""
    print("[builtin] " + msg, flush=True)


def read(ws, name, limit=1 << 20):
    p = os.path.join(ws, name)
    try:
        with open(p, "r", encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


def write(ws, name, text):
    """Write a workspace file atomically (temp file + rename)."""
    log("writing %s" % name)
    p = os.path.join(ws, name)
    tmp = p + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, p)


def load_state(ws):
    m = STATE_RE.search(read(ws, "STATE.md"))
    if not m:
        return None
    try:
        st = json.loads(m.group(1))
        return st if isinstance(st, dict) and st.get("version") == 1 else None
    except ValueError:
        return None


def last_dev_failed(history, n):
    """Did HISTORY.md report an error for iteration n?"""
    m = re.search(r"## Iteration %d\b(.*?)(?=\n## Iteration |\Z)" % n, history, re.S)
    return bool(m and "ERROR" in m.group(1))


def allowed(name, exc):
    return F.family_of(name) not in exc


def screen(ctx, exc):
    """Every allowed feature with its predictive power, best p first."""
    out = []
    for fam in F.FAMILIES:
        if fam in exc:
            continue
        for name in F.candidates(fam, ctx.multi):
            r, p, n, asset = R.power(ctx, name)
            out.append({"name": name, "corr": r, "p_value": p, "n": n, "asset": asset})
    out.sort(key=lambda d: (d["p_value"], d["name"]))
    return out


def ordered(screened, fav, exc):
    """Screened names, favoured families first, excluded ones left out."""
    names = [d["name"] for d in screened if allowed(d["name"], exc)]
    return [n for n in names if F.family_of(n) in fav] + \
        [n for n in names if F.family_of(n) not in fav]


def base_cfg(ctx, feats):
    cfg = {"features": feats, "lam": 1.0}
    if ctx.type == "hitfirst":
        cfg["shrink"] = 0.3
    if ctx.type in ("xsec_rank", "breakout"):
        cfg["select"] = 3.0
    return cfg


def moves(ctx, cfg, names, rng):
    """Candidate changes of a configuration: (description, new cfg)."""
    out = []
    cur = cfg["features"]
    adds = [n for n in names if n not in cur][:3]
    for n in adds:
        out.append(("add %s" % n, dict(cfg, features=cur + [n])))
    if len(cur) > 1:
        for n in cur:
            out.append(("drop %s" % n, dict(cfg, features=[x for x in cur if x != n])))
    for n in cur:
        kind, w = F.parse(n)
        ws = sorted(set(F.KINDS[F.KIND_FAMILY[kind]][1]) | {max(2, w // 2), min(F.MAX_WINDOW, w * 2),
                                                             max(2, (w * 3) // 4), min(F.MAX_WINDOW, (w * 3) // 2)})
        for w2 in ws:
            m = "%s_%d" % (kind, w2)
            if w2 != w and m not in cur and (kind != "volchg" or 4 * w2 < F.WARMUP):
                out.append(("window %s -> %s" % (n, m), dict(cfg, features=[m if x == n else x for x in cur])))
    for f in (0.1, 10.0):
        out.append(("regularisation x%g" % f, dict(cfg, lam=cfg["lam"] * f)))
    if ctx.type == "hitfirst":
        for s in (0.1, 0.5):
            if s != cfg["shrink"]:
                out.append(("shrink %g" % s, dict(cfg, shrink=s)))
    if ctx.type in ("xsec_rank", "breakout"):
        for g in (2.0, 4.0, 6.0):
            if g != cfg["select"]:
                out.append(("asset selection t >= %g" % g, dict(cfg, select=g)))
    # adds first (the search's main direction), the rest in seeded order
    head, tail = out[:len(adds)], out[len(adds):]
    rng.shuffle(tail)
    return head + tail


def try_cfgs(ctx, cands, tried):
    """Validate candidates not seen before: list of (objective, desc, cfg, value)."""
    res = []
    for desc, cfg in cands:
        key = json.dumps(cfg, sort_keys=True)
        if key in tried:
            v = tried[key]
        else:
            t0 = time.monotonic()
            log("running the dev walk-forward for %s" % desc)
            v, _r = R.validate(ctx, cfg)
            tried[key] = v
            log("validated %s: %s = %s (%.1f s)" % (desc, ctx.primary,
                "n/a" if v is None else "%.4f" % v, time.monotonic() - t0))
        o = ctx.objective(v)
        if o is not None:
            res.append((o, desc, cfg, v))
    return res


def feature_report(ctx, model, screened):
    """The analysis JSON's feature_report for the model's features."""
    by = {d["name"]: d for d in screened}
    rep = []
    ranked = sorted(model["features"], key=lambda n: by.get(n, {}).get("p_value", 1.0))
    for name in model["features"]:
        if name not in by:
            r, p, n, a = R.power(ctx, name)
            by[name] = {"name": name, "corr": r, "p_value": p, "n": n, "asset": a}
        d = by[name]
        col = ctx.column(d["asset"] or ctx.assets[0], name)
        col = col[np.isfinite(col)]
        rep.append({
            "name": name,
            "description": "%s family, window %d bars%s" % (F.family_of(name), F.parse(name)[1],
                                                           "" if not ctx.multi else ", strongest on %s" % d["asset"]),
            "signal": "continuous",
            "stats": {k: (float(f(col)) if len(col) else None)
                      for k, f in (("mean", np.mean), ("std", np.std), ("min", np.min), ("max", np.max))},
            "predictive_power": {
                "method": "pearson_corr", "value": round(d["corr"], 6), "p_value": d["p_value"],
                "n_samples": d["n"],
                "interpretation": "significant at 1%" if d["p_value"] < 0.01 else
                ("significant at 5%" if d["p_value"] < 0.05 else "not significant"),
            },
            "importance_rank": ranked.index(name) + 1,
        })
    return rep


def run(ws, n, challenge, seed, min_iterations, agent_id, data_dir):
    """One turn; returns the analysis dict it wrote."""
    cat = challenges(fields=("funding_1h",))
    if challenge not in cat:
        raise SystemExit("unknown challenge %r" % challenge)
    info = cat[challenge]
    t0 = time.monotonic()
    provider = DataProvider.from_dataset(data_dir, info["assets"])
    ctx = R.Context(challenge, info, provider)
    log("iteration %d on %s: %d dev bars, validation from bar %d" % (n, challenge, ctx.T, ctx.val_start))
    st = load_state(ws) or {"version": 1, "challenge": challenge, "seed": seed, "best": None,
                            "stall": 0, "favour": [], "exclude": [], "screen": None, "log": []}
    steer_msg = steer.parse(read(ws, "GOAL.md") + "\n" + read(ws, "INBOX.md"))
    st["favour"], st["exclude"] = steer.merge(st["favour"], st["exclude"], steer_msg)
    if steer_msg["explore"]:
        st["stall"] = 0
    prev_failed = n > 1 and last_dev_failed(read(ws, "HISTORY.md"), n - 1)
    plan = "screen every feature family and validate starting sets" if st["best"] is None else \
        "move from the best set %s (%s %.4f)" % (st["best"]["cfg"]["features"], ctx.primary, st["best"]["value"])
    write(ws, "notes.txt", read(ws, "notes.txt") +
          "\n== Iteration %d ==\nPlan: %s.\nFavour: %s; exclude: %s.%s\n" %
          (n, plan, st["favour"] or "-", st["exclude"] or "-",
           " The previous iteration failed its dev scoring; staying on the best earlier set." if prev_failed else ""))
    rng = random.Random(seed * 100003 + n)
    if st["screen"] is None or steer_msg["favour"] or steer_msg["exclude"]:
        st["screen"] = screen(ctx, [])
        log("screened %d features; best: %s" % (len(st["screen"]), ", ".join(
            "%s p=%.2g" % (d["name"], d["p_value"]) for d in st["screen"][:4])))
    names = ordered(st["screen"], st["favour"], st["exclude"])
    tried = dict(st.get("tried") or {})
    seen = set(tried)
    what_changed = ""
    best = st["best"]
    if best is not None and any(not allowed(x, st["exclude"]) for x in best["cfg"]["features"]):
        kept = [x for x in best["cfg"]["features"] if allowed(x, st["exclude"])] or names[:1]
        v, _r = R.validate(ctx, dict(best["cfg"], features=kept))
        best = {"cfg": dict(best["cfg"], features=kept), "value": v, "since": n}
        what_changed = "dropped excluded families as asked; "
    if best is None or best["value"] is None:
        top = names[:3]
        cands = [("start %s" % top[:k], base_cfg(ctx, top[:k])) for k in (1, 2, 3) if len(top) >= k]
        res = try_cfgs(ctx, cands, tried)
        if not res:
            raise SystemExit("no configuration could be validated")
        res.sort(key=lambda r: -r[0])
        o, desc, cfg, v = res[0]
        best = {"cfg": cfg, "value": v, "since": n}
        what_changed += "first set: %s" % desc
        st["stall"] = 0
        improved = True
    else:
        cands = [c for c in moves(ctx, best["cfg"], names, rng)
                 if json.dumps(c[1], sort_keys=True) not in seen][:MOVES]
        res = try_cfgs(ctx, cands, tried)
        res.sort(key=lambda r: -r[0])
        improved = bool(res) and res[0][0] > ctx.objective(best["value"]) + MIN_GAIN
        if improved:
            o, desc, cfg, v = res[0]
            what_changed += "%s (%s %.4f -> %.4f)" % (desc, ctx.primary, best["value"], v)
            best = {"cfg": cfg, "value": v, "since": n}
            st["stall"] = 0
        else:
            what_changed += "tried %s; none improved on %.4f, kept the set" % (
                ", ".join(c[0] for c in cands), best["value"])
            st["stall"] += 1
    st["best"] = best
    tried_list = [{"cfg": json.loads(k), "value": v} for k, v in tried.items() if k not in seen]
    st["tried"] = dict(list(tried.items())[-400:])
    model = R.fit(ctx, best["cfg"], ctx.T)
    hyp = "features %s predict %s on the dev walk-forward (%s %.4f vs baseline %.4f)" % (
        ", ".join(best["cfg"]["features"]), challenge, ctx.primary, best["value"], ctx.baseline)
    write(ws, "iteration_%d.py" % n, strategy_source(best.get("since", n), agent_id, challenge, model,
                                                              ctx.ci, hyp))
    screened = st["screen"]
    done = (st["stall"] >= MAX_STALL or steer_msg["stop"]) and n >= min_iterations
    worked = [t for t in tried_list if ctx.objective(t["value"]) is not None and
              ctx.objective(t["value"]) >= ctx.objective(best["value"]) - 1e-12]
    analysis = {
        "feature_report": feature_report(ctx, model, screened),
        "inference_spec": {
            "summary": "%s of %s on 1-minute closes and volumes" % (
                {"binary": "logistic regression", "hitfirst": "multinomial regression (shrunk to the class prior)",
                 "lbfgs": "class-balanced multinomial regression", "xsec_rank": "ridge regression per asset on its own 30-minute trend, "
                 "only the assets where it is significant ranked (the others tied)",
                 "breakout": "ridge regression per asset on its own 30-minute trend along the break's side, "
                 "only the assets where it is significant scored (the others 0.5)"}[ctx.type],
                ", ".join(model["features"])),
            "data_requirements": [{"field": "close", "source": "OHLCV", "granularity": "1m",
                                   "lookback": "%d bars" % F.WARMUP,
                                   "description": "closes of %s" % ", ".join(ctx.assets[:5]) +
                                   (" ..." if len(ctx.assets) > 5 else "")},
                                  {"field": "volume", "source": "OHLCV", "granularity": "1m",
                                   "lookback": "%d bars" % F.MAX_WINDOW, "description": "volumes"}],
            "update_frequency": "every %d minute%s" % (ctx.ci, "" if ctx.ci == 1 else "s"),
            "latency_sensitivity": "low",
            "output_format": "%d float32 values per bar" % ctx.dim,
            "dependencies": ["numpy"],
        },
        "hypothesis": hyp,
        "what_changed": what_changed,
        "what_worked": "; ".join("%s: %.4f" % (",".join(t["cfg"]["features"]), t["value"]) for t in worked) or
                       "the kept set",
        "what_failed": "; ".join("%s: %s" % (",".join(t["cfg"]["features"]),
                                               "n/a" if t["value"] is None else "%.4f" % t["value"])
                                 for t in tried_list if t not in worked) or "nothing new failed",
        "expected_outcome": "%s near %.4f on unseen data" % (ctx.primary, best["value"]),
        "log": [l for l in ("validated %d configurations" % len(tried),
                            "improved" if improved else "no improvement (stall %d)" % st["stall"])],
        "done": bool(done),
    }
    write(ws, "iteration_%d_analysis.json" % n, json.dumps(analysis, indent=2, allow_nan=False,
                                                            default=lambda o: None))
    st["log"] = (st["log"] + [{"iteration": n, "value": best["value"], "features": best["cfg"]["features"],
                               "improved": improved}])[-50:]
    write(ws, "notes.txt", read(ws, "notes.txt") + "Result: %s. Kept %s (%s %.4f). %s\n" % (
        what_changed, best["cfg"]["features"], ctx.primary, best["value"],
        "Done." if done else "Next: keep searching."))
    write(ws, "STATE.md", "# Agent state\n\nChallenge %s, seed %d. Best set so far: %s with %s %.4f on the "
          "dev walk-forward. Stalled iterations: %d. Favour: %s. Exclude: %s.\n\n"
          "The block below is the built-in agent's memory; edit with care.\n\n```json agent-state\n%s\n```\n" % (
              challenge, seed, ", ".join(best["cfg"]["features"]), ctx.primary, best["value"], st["stall"],
              st["favour"] or "-", st["exclude"] or "-", json.dumps(st, sort_keys=True, default=_jsonable)))
    log("wrote iteration_%d.py (%s); %.1f s" % (n, ", ".join(best["cfg"]["features"]), time.monotonic() - t0))
    return analysis


def _jsonable(o):
    if isinstance(o, (np.floating, np.integer)):
        v = o.item()
        return None if isinstance(v, float) and not math.isfinite(v) else v
    raise TypeError(type(o))


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="agenttest_agent", description="the built-in research agent, one turn")
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--iteration", type=int, required=True)
    ap.add_argument("--challenge", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-iterations", type=int, default=1)
    ap.add_argument("--agent-id", default="local")
    ap.add_argument("--data", default=os.environ.get("DATASET_DIR"))
    a = ap.parse_args(argv)
    if not a.data:
        ap.error("--data or $DATASET_DIR: the dev dataset")
    if not 1 <= a.iteration < 10000:
        ap.error("--iteration out of range")
    run(a.workspace, a.iteration, a.challenge, a.seed, a.min_iterations, a.agent_id, a.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
