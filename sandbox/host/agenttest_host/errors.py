"""Exception → ERROR frame meta, with host paths removed.

Only frames of the strategy's own code keep their place ("strategy.py");
library frames show as <python>/<file name>; the host's own frames are
dropped; any host or interpreter path inside the message is replaced.
"""
import os
import sys
import traceback

STRATEGY_FILE = "strategy.py"
_HOST_DIR = os.path.dirname(os.path.abspath(__file__))
_MAX_LINES = 20
_MAX_MESSAGE = 2000


def _path_prefixes():
    roots = {_HOST_DIR, os.path.dirname(_HOST_DIR), sys.prefix, sys.exec_prefix}
    roots.update(p for p in sys.path if p and os.path.isabs(p))
    return sorted((r for r in roots if r and r != "/"), key=len, reverse=True)


def _scrub(text):
    for root in _path_prefixes():
        text = text.replace(root + os.sep, "<python>/").replace(root, "<python>")
    return text


def _frame_name(filename):
    if filename == STRATEGY_FILE:
        return STRATEGY_FILE
    if os.path.abspath(filename).startswith(_HOST_DIR + os.sep):
        return None
    return "<python>/" + os.path.basename(filename)


def error_meta(exc, phase, code):
    """The ERROR meta for exception `exc` raised during `phase`."""
    lines = []
    for fr in traceback.extract_tb(exc.__traceback__):
        name = _frame_name(fr.filename)
        if name is None:
            continue
        lines.append('File "%s", line %s, in %s' % (name, fr.lineno, fr.name))
        if fr.line:
            lines.append("    " + fr.line.strip())
    if isinstance(exc, SyntaxError):
        where = "%s, line %s" % (STRATEGY_FILE, exc.lineno)
        message = "%s (%s)" % (exc.msg, where)
        if exc.text:
            lines.append('File "%s", line %s' % (STRATEGY_FILE, exc.lineno))
            lines.append("    " + exc.text.rstrip("\n"))
    else:
        message = str(exc)
    lines.append("%s: %s" % (type(exc).__name__, message))
    lines = [_scrub(ln) for ln in lines[-_MAX_LINES:]]
    return {"code": code, "type": type(exc).__name__, "message": _scrub(message)[:_MAX_MESSAGE],
            "traceback": lines, "phase": phase}
