#!/usr/bin/python3
"""Render an agenttest nginx template.

    render.py TEMPLATE NAME=VALUE ... > OUT

The template language is deliberately tiny, so a rendered file reads like
the template:
  @NAME@            replaced by VALUE (every name used must be given);
  #@if NAME         the lines up to the matching "#@endif" are kept only
                    when NAME was given with a value other than "" or "0";
  #@include FILE    replaced by FILE from nginx/snippets/, rendered the same
                    way and indented like the directive;
  #@each NAME       the lines up to "#@endeach" repeated for every
                    comma-separated item of NAME's value, with @ITEM@
                    replaced by the item (empty items are skipped).

Values end up inside nginx directives, so they are checked against a strict
character set: a value from the environment can never add a directive
(no ';', braces, quotes, whitespace or newlines). Exit status 0 on success,
2 on a usage or template error (with a one-line message on stderr).
"""

import os
import re
import sys

SNIPPETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "snippets")
SAFE_VALUE = re.compile(r"^[A-Za-z0-9_./:\[\]@=+,-]*$")
# Values that are whole directives (e.g. "user root;") are listed here and
# built by the renderer's caller from fixed strings only.
DIRECTIVE_VALUES = {"USER_LINE", "ACCESS_LOG"}
DIRECTIVE_VALUE = re.compile(r"^[A-Za-z0-9_./ =:-]*;?$")
PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")
MAX_DEPTH = 4


class RenderError(Exception):
    """A template or value problem; the message is shown to the user."""


def parse_values(args):
    """Parse NAME=VALUE arguments into a dict, validating each value."""
    values = {}
    for arg in args:
        name, sep, value = arg.partition("=")
        if not sep or not re.match(r"^[A-Z][A-Z0-9_]*$", name):
            raise RenderError(f"bad argument {arg!r}: expected NAME=VALUE")
        pattern = DIRECTIVE_VALUE if name in DIRECTIVE_VALUES else SAFE_VALUE
        if not pattern.match(value):
            raise RenderError(f"unsafe value for {name}: {value!r}")
        values[name] = value
    return values


def substitute(line, values, where):
    """Replace every @NAME@ in line; an unknown name is an error."""
    def repl(m):
        name = m.group(1)
        if name not in values:
            raise RenderError(f"{where}: no value given for @{name}@")
        return values[name]
    return PLACEHOLDER.sub(repl, line)


def render(path, values, depth=0):
    """Render the template at path and return its lines (with newlines)."""
    if depth > MAX_DEPTH:
        raise RenderError(f"{path}: includes nested too deeply")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    out, keep, each = [], [True], None
    for no, line in enumerate(lines, 1):
        where = f"{os.path.basename(path)}:{no}"
        stripped = line.strip()
        if each is not None:
            if stripped == "#@endeach":
                name, body = each
                each = None
                if keep[-1]:
                    for item in filter(None, values.get(name, "").split(",")):
                        out.extend(substitute(b, dict(values, ITEM=item), where) for b in body)
            elif stripped.startswith("#@"):
                raise RenderError(f"{where}: no directives inside #@each")
            else:
                each[1].append(line)
            continue
        if stripped.startswith("#@each "):
            name = stripped[7:].strip()
            if name not in values:
                raise RenderError(f"{where}: no value given for #@each {name}")
            each = (name, [])
            continue
        if stripped.startswith("#@if "):
            name = stripped[5:].strip()
            keep.append(keep[-1] and values.get(name, "") not in ("", "0"))
            continue
        if stripped == "#@endif":
            if len(keep) == 1:
                raise RenderError(f"{where}: #@endif without #@if")
            keep.pop()
            continue
        if not keep[-1]:
            continue
        if stripped.startswith("#@include "):
            name = stripped[10:].strip()
            if "/" in name or name.startswith("."):
                raise RenderError(f"{where}: bad include {name!r}")
            indent = line[: len(line) - len(line.lstrip())]
            for sub in render(os.path.join(SNIPPETS, name), values, depth + 1):
                out.append(indent + sub if sub.strip() else sub)
            continue
        out.append(substitute(line, values, where))
    if len(keep) != 1:
        raise RenderError(f"{path}: #@if without #@endif")
    if each is not None:
        raise RenderError(f"{path}: #@each without #@endeach")
    return out


def main(argv):
    """Entry point: render argv[1] with the NAME=VALUE pairs to stdout."""
    if len(argv) < 2:
        print("usage: render.py TEMPLATE NAME=VALUE ...", file=sys.stderr)
        return 2
    try:
        values = parse_values(argv[2:])
        lines = render(argv[1], values)
    except (RenderError, OSError) as e:
        print(f"render.py: {e}", file=sys.stderr)
        return 2
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
