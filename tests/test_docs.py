"""docs/USAGE.md covers every CLI verb and option; README starts with the two commands."""

import argparse
import os
import re

from cc_continuity import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _parsers():
    parser = cli.build_parser()
    stack = [("", parser)]
    while stack:
        name, p = stack.pop()
        yield name, p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, sp in action.choices.items():
                    stack.append(((name + " " + sub).strip(), sp))


def test_usage_documents_every_verb_and_option():
    with open(os.path.join(ROOT, "docs", "USAGE.md")) as f:
        usage = f.read()
    missing = []
    for name, p in _parsers():
        if name and "`cc-continuity %s`" % name not in usage:
            missing.append("verb " + name)
        for action in p._actions:
            if action.help == argparse.SUPPRESS:
                continue  # hidden on purpose (test hooks)
            for opt in action.option_strings:
                if opt.startswith("--") and opt not in usage:
                    missing.append("%s %s" % (name, opt))
    assert not missing, "docs/USAGE.md is missing: %s" % ", ".join(sorted(set(missing)))


def test_readme_starts_with_install_and_test_commands():
    with open(os.path.join(ROOT, "README.md")) as f:
        head = f.read().split("```sh", 1)[1].split("```", 1)[0]
    lines = [line for line in head.strip().splitlines() if line.strip()]
    assert len(lines) == 2
    assert lines[0].split("#")[0].split() == ["python3", "install.py"]  # run as written: test_readme_install.py
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = f.read()
    test_cmd = re.search(r"&& (python3 -m pytest)\s*$", lines[1]).group(1)
    assert re.search(r"^%s\s*$" % re.escape(test_cmd), ci, re.M), "CI must run the README's test command"
