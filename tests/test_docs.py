"""docs/USAGE.md covers every CLI verb and option; README starts with the two commands."""

import argparse
import json
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
    # The test line makes its own virtualenv and runs the default suite with it; CI runs that suite
    # with the interpreter of its own virtualenv (tests/e2e/test_readme_tests.py runs the line itself).
    venv = re.match(r"python3 -m venv (\S+) && ", lines[1]).group(1)
    assert lines[1].endswith("&& %s/bin/python -m pytest -n auto" % venv), lines[1]
    assert re.search(r"^python3 -m pytest -n auto\s*$", ci, re.M), "CI must run the README's test suite"


def _usage_block(usage, title):
    m = re.search(r"^## %s\n\n```\n(.*?)```" % re.escape(title), usage, re.M | re.S)
    return m.group(1) if m else None


def _help_of(name):
    """``cc-continuity <name> --help`` through ``cli.main`` (its fast paths included), 80 columns:
    ``(exit status, stdout, stderr)``."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main((name.split() if name else []) + ["--help"])
            except SystemExit as e:
                rc = e.code
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return rc or 0, out.getvalue(), err.getvalue()


def test_every_help_is_the_one_in_usage():
    """Each verb's --help prints its usage (not a status line, not nothing) and docs/USAGE.md shows it verbatim.

    argparse's layout changed in 3.13, so the verbatim comparison is made on the 3.11/3.12 it was written with.
    """
    import sys

    with open(os.path.join(ROOT, "docs", "USAGE.md")) as f:
        usage = f.read()
    top = [name for name, _ in _parsers() if name and " " not in name]
    wrong = []
    for name in [""] + top:
        rc, out, err = _help_of(name)
        if rc != 0 or not out.startswith("usage: cc-continuity %s" % name) or err:
            wrong.append("%s: --help printed %r (exit %s)" % (name or "cc-continuity", out[:60], rc))
            continue
        want = _usage_block(usage, "Reference" if not name else "`cc-continuity %s`" % name)
        if want is None:
            wrong.append("%s: no ```block``` under its heading in docs/USAGE.md" % name)
        elif sys.version_info < (3, 13) and want != out:
            wrong.append("%s: docs/USAGE.md shows another --help (regenerate it with COLUMNS=80)" % (name or "top"))
    assert not wrong, "\n".join(wrong)


def test_the_command_list_names_every_verb():
    """No verb hidden from `cc-continuity --help` (notify-flush was)."""
    out = _help_of("")[1]
    listed = set(re.findall(r"^    (\S+)", out, re.M))
    verbs = {name for name, _ in _parsers() if name and " " not in name}
    assert verbs <= listed, "not in --help: %s" % ", ".join(sorted(verbs - listed))


def test_install_and_configure_read_values_alike():
    """One parser for token counts, thresholds and URLs: what configure takes, install takes."""
    import contextlib
    import io

    parser = cli.build_parser()
    for opt, value, want in (("--window", "128k", 128000), ("--window", "1m", 1000000),
                             ("--thresholds", "50,60,70", (50, 60, 70))):
        for verb in ("install", "configure"):
            assert getattr(parser.parse_args([verb, opt, value]), opt[2:]) == want, (verb, opt, value)
    for verb in ("install", "configure"):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                parser.parse_args([verb, "--window", "lots"])
            except SystemExit as e:
                assert e.code == 2
        assert "expected a token count like 200000, 200k or 1m" in err.getvalue(), (verb, err.getvalue())


def _readme_diagram():
    with open(os.path.join(ROOT, "README.md")) as f:
        blocks = re.findall(r"^```mermaid\n(.*?)^```", f.read(), re.M | re.S)
    assert len(blocks) == 1, "README.md has one Mermaid diagram of the loop"
    return blocks[0]


def test_readme_diagram_draws_the_state_machine_as_it_is():
    """Every state box is a state of session.TRANSITIONS (and every state has one); every solid
    arrow between two states is a transition the table allows (dotted ones cross to the next
    session or to a helper)."""
    from cc_continuity import session

    text = _readme_diagram()
    bare = re.sub(r'"[^"]*"', '""', text)  # labels out: what is left are node ids and arrows
    ids = set(re.findall(r"\b[A-Za-z_]+\b", bare)) - {"flowchart", "TD"}
    named = {i for i in ids if i.isupper()}
    assert named <= set(session.TRANSITIONS), "no such state: %s" % sorted(named - set(session.TRANSITIONS))
    assert named == set(session.TRANSITIONS), "not drawn: %s" % sorted(set(session.TRANSITIONS) - named)
    for state in named:  # each box shows its state's name
        assert re.search(r'^\s*%s\["%s<br/>' % (state, state), text, re.M), state
    solid = re.findall(r'^\s*([A-Z_]+)\s*-->(?:\|"[^"]*"\|)?\s*([A-Z_]+)\s*$', text, re.M)
    assert len(solid) >= 10
    wrong = [(a, b) for a, b in solid if not session.is_allowed(a, b)]
    assert not wrong, "arrows the state machine does not allow: %s" % wrong


def test_readme_runs_the_e2e_suite_as_ci_does():
    """README's e2e lines are .ci/run's: `-m 'e2e and not codex and not gemini'` with a Claude Code binary,
    `-m 'e2e and codex'` with a Codex one, `-m 'e2e and gemini'` with a Gemini one (a bare `-m e2e` on a
    machine with no Codex CLI gave 28 errors)."""
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = f.read()
    runs = re.findall(r"(CC_CONTINUITY_(?:CLAUDE|CODEX|GEMINI)_BIN)=(?:\"[^\"]*\"|\S+) "
                      r"\S*python3? -m pytest -m ('[^']*'|\S+)", readme)
    assert sorted(runs) == [("CC_CONTINUITY_CLAUDE_BIN", "'e2e and not codex and not gemini'"),
                            ("CC_CONTINUITY_CODEX_BIN", "'e2e and codex'"),
                            ("CC_CONTINUITY_GEMINI_BIN", "'e2e and gemini'")], runs
    for var, marker in runs:
        assert re.search(r"^%s=\S+ python3 -m pytest -m %s$" % (var, re.escape(marker)), ci, re.M), (var, marker)
    assert not re.search(r"pytest -m e2e\b", readme), "README names a bare `-m e2e`"


def _options_of():
    """{"verb [sub]": {every option string}} of the CLI."""
    return {name: {o for a in p._actions for o in a.option_strings} for name, p in _parsers() if name}


def test_every_command_the_docs_write_out_takes_the_options_they_give_it():
    """A `cc-continuity <verb> … --opt` in README or docs/*.md names an option the verb has (README
    implied `uninstall --dry-run`, and share's hint named `configure` for share_remote)."""
    options = _options_of()
    wrong = []
    for doc in ["README.md"] + ["docs/" + n for n in sorted(os.listdir(os.path.join(ROOT, "docs"))) if n.endswith(".md")]:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        for span in re.findall(r"`(cc-continuity [^`\n]+)`", text):
            words = span.split()[1:]
            verb = next((" ".join(words[:n]) for n in (2, 1) if " ".join(words[:n]) in options), None)
            if verb is None:
                continue
            for opt in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", span):
                if opt not in options[verb]:
                    wrong.append("%s: `%s`: %s has no %s" % (doc, span, verb, opt))
    assert not wrong, "\n".join(wrong)


def test_uninstall_has_no_dry_run_and_readme_does_not_offer_one():
    assert "--dry-run" not in _options_of()["uninstall"]
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        for line in f:
            if "uninstall" in line and "--dry-run" in line:
                assert "uninstall has no dry run" in line, line


def test_the_license_is_the_mit_text_the_metadata_names():
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 cc-continuity maintainers\n"), text[:80]
    assert "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND" in text
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        assert 'license = { text = "MIT" }' in f.read()
    with open(os.path.join(ROOT, "plugin", ".claude-plugin", "plugin.json"), encoding="utf-8") as f:
        assert json.load(f)["license"] == "MIT"


def test_limitations_and_readme_agree_on_what_zero_touch_needs():
    """README: the mod clears in-process with no tmux; LIMITATIONS said zero-touch needs tmux."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = " ".join(f.read().split())
    with open(os.path.join(ROOT, "docs", "LIMITATIONS.md"), encoding="utf-8") as f:
        limits = " ".join(f.read().split())
    assert "in-process, with no tmux" in readme
    assert "Zero-touch needs tmux." not in limits
    assert "Zero-touch needs the plugin's mod or tmux." in limits and "in-process: no tmux" in limits
