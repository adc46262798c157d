"""Operator steering of the built-in agent, from GOAL.md and INBOX.md.

Recognised (case-insensitive, one per sentence or line; docs/agents.md):
  favour|favor|prefer|focus on|try|use <family>    search that family first
  exclude|avoid|drop|no|without|skip <family>      never use it (dropped at once)
  stop|finish|wrap up                              signal done (honoured after
                                                   min_iterations)
  explore|keep going                               forget the stall count
Families: momentum (returns, ret), rsi, bollinger (bb, zscore), volatility
(vol), volume (vwap), cross (cross-asset, market).
"""
import re

SYNONYMS = {
    "momentum": "momentum", "returns": "momentum", "return": "momentum", "ret": "momentum",
    "rsi": "rsi", "bollinger": "bollinger", "bb": "bollinger", "zscore": "bollinger",
    "z-score": "bollinger", "volatility": "volatility", "vol": "volatility",
    "volume": "volume", "vwap": "volume", "cross": "cross", "cross-asset": "cross",
    "market": "cross",
}
_FAV = re.compile(r"\b(?:favou?r|prefer|focus on|try|use)\s+(?:the\s+)?([a-z-]+)")
_EXC = re.compile(r"\b(?:exclude|avoid|drop|no|without|skip)\s+(?:the\s+)?([a-z-]+)")
_STOP = re.compile(r"\b(?:stop|finish|wrap up)\b")
_EXPLORE = re.compile(r"\b(?:explore|keep going)\b")


def parse(text):
    """{favour: [...], exclude: [...], stop: bool, explore: bool} of a text;
    later statements about a family win over earlier ones."""
    fav, exc = [], []
    stop = explore = False
    for sentence in re.split(r"[\n.;!?]+", text.lower()):
        events = [(m.start(), "fav", m.group(1)) for m in _FAV.finditer(sentence)]
        events += [(m.start(), "exc", m.group(1)) for m in _EXC.finditer(sentence)]
        for _pos, kind, word in sorted(events):
            fam = SYNONYMS.get(word)
            if fam is None:
                continue
            for lst in (fav, exc):
                if fam in lst:
                    lst.remove(fam)
            (fav if kind == "fav" else exc).append(fam)
        stop = stop or bool(_STOP.search(sentence))
        explore = explore or bool(_EXPLORE.search(sentence))
    return {"favour": fav, "exclude": exc, "stop": stop, "explore": explore}


def merge(old_fav, old_exc, new):
    """Fold a parsed message into the standing favour/exclude lists."""
    fav = [f for f in old_fav if f not in new["exclude"]]
    exc = [f for f in old_exc if f not in new["favour"]]
    for f in new["favour"]:
        if f not in fav:
            fav.append(f)
    for f in new["exclude"]:
        if f not in exc:
            exc.append(f)
    return fav, exc
