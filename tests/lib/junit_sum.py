#!/usr/bin/env python3
"""Sum JUnit XML files (cmocka, pytest, our own) into one closing line.

usage: junit_sum.py DIR [--failed-only]
Prints "N passed, N failed, N skipped" (or only the failed count).
"""
import pathlib
import sys
import xml.etree.ElementTree as ET


def suites(root):
    if root.tag == "testsuite":
        yield root
    for s in root.iter("testsuite"):
        if s is not root:
            yield s


def main():
    folder = pathlib.Path(sys.argv[1])
    passed = failed = skipped = 0
    for f in sorted(folder.glob("*.xml")):
        try:
            root = ET.parse(f).getroot()
        except ET.ParseError:
            failed += 1
            continue
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    if "--failed-only" in sys.argv:
        print(failed)
        return
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)


if __name__ == "__main__":
    main()
