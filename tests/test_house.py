"""The house's rules (issue 35): no module over 600 lines and no function over 60 without a reason; each
error class defined in one place (errors.py, under one base).

A module or function past its bound is listed below with why it stays (as tests/test_imports.py lists
its kept imports); an entry that no longer needs its place fails too, so the lists only shrink.
bench/house.py prints the figures.
"""

import ast
import os

from helpers import benchscript

HOUSE = benchscript.load("house")  # bench/house.py: the package's figures

PKG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cc_continuity")
MODULE_MAX, FUNCTION_MAX = 600, 60

# module path (below cc_continuity/) -> why it is longer
LONG_MODULES = {
    "rehearse/scripted_model.py": "a stand-alone script (python -m) with its scenario language; to cut: the "
                                  "HTTP server and the rule matcher",
    "rehearse/__init__.py": "the rehearsal's sandbox and its driver; to cut: the sandbox and the report",
    "tmux/rotator.py": "the rotator's one state machine (typing, drafts, hand-over); to cut: the typing of "
                       "one prompt and the steps",
    "holds/shell.py": "the tokenizer of ours and tree-sitter's reading share their walk; to cut: the two readers",
    "rotation/turn.py": "the turn's end in protocol order; to cut: the handoff's check and the fall-backs",
    "rotation/handoff.py": "the handoff's template, validation and claims; to cut: the claims",
    "meter.py": "the Claude transcript's tail and the levels, both on the hot path; to cut: the tail reader",
    "install/settings.py": "the settings.json merge (plan, render, the hook table); to cut: the hook table",
}

# "module path:qualified name" -> why it is longer
LONG_FUNCTIONS = {
    "hosts/claude/install.py:install": "plan, check and apply in one order that never leaves a hook without "
                                      "its files; to cut: plan and apply",
    "hosts/codex/install.py:install": "as hosts/claude/install.py's, for hooks.json and its trust",
    "hosts/gemini/install.py:install": "as hosts/claude/install.py's, for settings.json, its policy and the MCP "
                                       "server's entry",
    "rotation/revalidation.py:revalidate": "the checkpoint against the world in one pass (drift, history, "
                                           "facts); to cut by check",
    "share/claiming.py:claim_from": "list, fetch, restore, lease, move, import with one rollback around "
                                    "them; to cut: the steps, keeping the one rollback",
    "share/publish.py:publish": "the tries of one publish under the project lock with their status file",
    "holds/classify.py:_one": "one simple command's effects, a table-like chain of cases",
    "install/__init__.py:_uninstall": "each agent's piece, then what they share, in one order",
    "install/settings.py:plan_install": "the settings.json merge in one read-only plan",
    "meter.py:read_transcript": "the transcript's bounded tail read, on the hot path: one function for speed",
    "rotation/checkpoint.py:finalize": "the manifest's fields in one place",
    "rotation/claim.py:_facts": "the bootstrap's facts in their order",
    "rotation/revalidation.py:crash_handoff": "the machine handoff's sections in their order",
    "rotation/start.py:prompt_submitted": "a prompt's cases in protocol order",
    "rotation/turn.py:turn_ended": "the turn's end in protocol order",
    "hosts/claude/launch.py:_plan": "the trampoline's plan, standard library only (python -I)",
    "watch/liveness.py:Scanner._observe": "one session's observation from its record and files",
}


def _modules():
    """(path below cc_continuity/, path) of every module of the package."""
    for path in HOUSE.modules(PKG_DIR):
        yield os.path.relpath(path, PKG_DIR), path


_functions = HOUSE.functions  # bench/house.py's walk: one reading of a function's length for both


def measure():
    modules, functions = {}, {}
    for rel, path in _modules():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        n = text.count("\n")
        if n > MODULE_MAX:
            modules[rel] = n
        for name, k in _functions(ast.parse(text, rel)):
            if k > FUNCTION_MAX:
                functions["%s:%s" % (rel, name)] = k
    return modules, functions


def test_no_module_is_longer_than_its_bound_without_a_reason():
    modules, _ = measure()
    unlisted = ["%s: %d lines" % (m, n) for m, n in sorted(modules.items()) if m not in LONG_MODULES]
    stale = sorted(set(LONG_MODULES) - set(modules))
    assert not unlisted, "over %d lines, cut it along its seams or list why:\n  " % MODULE_MAX + "\n  ".join(unlisted)
    assert not stale, "listed as long but no longer over %d lines (take it off):\n  " % MODULE_MAX + "\n  ".join(stale)


def test_no_function_is_longer_than_its_bound_without_a_reason():
    _, functions = measure()
    unlisted = ["%s: %d lines" % (f, n) for f, n in sorted(functions.items()) if f not in LONG_FUNCTIONS]
    stale = sorted(set(LONG_FUNCTIONS) - set(functions))
    assert not unlisted, "over %d lines, split it along its steps or list why:\n  " % FUNCTION_MAX + "\n  ".join(unlisted)
    assert not stale, "listed as long but no longer over %d lines (take it off):\n  " % FUNCTION_MAX + "\n  ".join(stale)


def test_every_reason_says_something():
    for name, why in {**LONG_MODULES, **LONG_FUNCTIONS}.items():
        assert isinstance(why, str) and len(why.split()) >= 4, name


def test_the_measure_counts_a_method_by_its_qualified_name():
    body = "".join("        x%d = %d\n" % (i, i) for i in range(FUNCTION_MAX))
    tree = ast.parse("class C:\n    def m(self):\n" + body + "\n    def short(self):\n        pass\n")
    assert [(n, k) for n, k in _functions(tree) if k > FUNCTION_MAX] == [("C.m", FUNCTION_MAX + 1)]


# Exception classes defined outside errors.py: control flow or a module's own signal, never told to the user.
OWN_EXCEPTIONS = {
    "lock.py:LockTimeout": "a TimeoutError the callers of Lock catch and turn into their own error",
    "safefile.py:NotRegular": "an OSError: callers that catch OSError treat a FIFO like a missing file",
    "fastjson.py:DecodeError": "the hot path's ValueError, as json's own decode error is",
    "faults.py:Injected": "a test's injected fault, raised only where CC_CONTINUITY_FAULTS names a point",
    "faults.py:TookTooLong": "a test's injected delay ran past its point's bound (control flow)",
    "statusline.py:Deadline": "the status line's SIGALRM (control flow, a BaseException)",
    "session.py:IllegalTransition": "a bug: a state change the protocol does not allow (an assertion)",
    "watch/executor.py:_Gone": "the pane or process went away mid-action (control flow inside the executor)",
    "snapshot/build.py:Rebuild": "the private index must be built again (control flow inside the build)",
    "tmux/rotator.py:_Busy": "another rotator holds the pane: the rotator exits quietly (never an error shown)",
    "install/bootstrap.py:BootstrapError": "install.py's first step runs before the package can be imported",
    "hosts/codex/appserver.py:AppServerError": "the Codex app server's protocol, turned into a reason by its caller",
    "hosts/entry.py:PayloadError": "a payload that is not its host's: the hook logs it and exits 0",
    "deps/build.py:BuildError": "a package build that failed: logged, the feature degrades without it",
}


def _exception_classes():
    for rel, path in _modules():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), rel)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                if any(b.endswith(("Error", "Exception", "Exceeded", "Timeout", "Failed", "Held")) or
                       b in ("BaseException", "Exception") for b in bases):
                    yield "%s:%s" % (rel, node.name)


def test_every_error_class_is_defined_in_errors_py_or_listed_as_a_modules_own():
    found = {c for c in _exception_classes() if not c.startswith("errors.py:")}
    assert found - set(OWN_EXCEPTIONS) == set(), "define it in errors.py under its area's class, or list why not"
    assert set(OWN_EXCEPTIONS) - found == set(), "listed but no longer defined there (take it off)"


def test_every_user_facing_error_derives_from_the_one_base():
    from cc_continuity import errors

    for name in dir(errors):
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__:
            assert issubclass(obj, errors.Error) or name == "BudgetExceeded", name
