"""CHECK request: the syntax and contract check of submitted strategy code.

The API asks for it before it stores a submission (POST /strategies/submit).
The source is parsed with `ast.parse` only: it is never compiled to a code
object that runs, never imported, never executed, so no statement of the
submission takes effect. The answer names the strategy kind the code
defines, or says exactly what is wrong:

  {"ok": true,  "kind": "simulate" | "positions" | "signal", "functions": [...], "classes": [...]}
  {"ok": false, "error": "syntax",   "message": ..., "line": L, "column": C}
  {"ok": false, "error": "contract", "message": ..., "missing": [...]}
  {"ok": false, "error": "encoding", "message": ...}

Kinds, in order of precedence: a top-level `def simulate(prices, params)`,
a top-level `def positions(prices, params)`, or the signal classes
(`Featurizer` and `Predictor`, or the agent files' `TechFeaturizer` and
`TechPredictor`).
"""
import ast

ENTRY_POINTS = ("simulate", "positions")
SIGNAL_CLASSES = (("Featurizer", "Predictor"), ("TechFeaturizer", "TechPredictor"))


def _positional_capacity(fn):
    """How many positional arguments fn accepts (None: any number)."""
    a = fn.args
    if a.vararg is not None:
        return None
    return len(a.posonlyargs) + len(a.args)


def _required_positional(fn):
    """How many positional arguments fn requires."""
    a = fn.args
    return len(a.posonlyargs) + len(a.args) - len(a.defaults)


def check(source):
    """Check source (bytes); return the answer dict described above."""
    try:
        text = bytes(source).decode("utf-8")
    except UnicodeDecodeError as exc:
        return {"ok": False, "error": "encoding", "message": "code is not valid UTF-8 (byte %d)" % exc.start}
    try:
        tree = ast.parse(text, filename="strategy.py", mode="exec")
    except SyntaxError as exc:
        return {"ok": False, "error": "syntax", "message": exc.msg or "invalid syntax",
                "line": exc.lineno or 0, "column": exc.offset or 0}
    except (RecursionError, MemoryError, ValueError) as exc:
        return {"ok": False, "error": "syntax", "message": "code cannot be parsed: %s" % type(exc).__name__,
                "line": 0, "column": 0}
    functions = {}
    classes = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            classes.add(node.name)
    for name in ENTRY_POINTS:
        fn = functions.get(name)
        if fn is None:
            continue
        if isinstance(fn, ast.AsyncFunctionDef):
            return {"ok": False, "error": "contract", "missing": [name],
                    "message": "%s must be a plain function, not async" % name}
        cap = _positional_capacity(fn)
        if (cap is not None and cap < 2) or _required_positional(fn) > 2:
            return {"ok": False, "error": "contract", "missing": [name],
                    "message": "%s must take two positional arguments: %s(prices, params)" % (name, name)}
        return {"ok": True, "kind": name, "functions": sorted(functions), "classes": sorted(classes)}
    for pair in SIGNAL_CLASSES:
        if all(c in classes for c in pair):
            return {"ok": True, "kind": "signal", "functions": sorted(functions), "classes": sorted(classes)}
    for pair in SIGNAL_CLASSES:
        if any(c in classes for c in pair):
            missing = [c for c in pair if c not in classes]
            return {"ok": False, "error": "contract", "missing": missing,
                    "message": "signal code must define the classes %s" % " and ".join(pair)}
    return {"ok": False, "error": "contract", "missing": list(ENTRY_POINTS),
            "message": "code must contain simulate(prices, params) function "
                       "(or positions(prices, params), or the Featurizer and Predictor classes of a signal)"}
