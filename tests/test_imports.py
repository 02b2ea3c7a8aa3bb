"""Imports go at the top of the file; a function-local one is a decision, listed here with why.

The hot-path discipline (posix builtins, lazy imports) belongs where the fast path
goes and nowhere else.  A module may import inside a function only for one of these
reasons, and only where this file says so:

* START-UP: the import would cost a measured start-up path more than ~5 ms
  (``python3 -X importtime`` before and after, with the ``.pyc`` files written: a
  module compiled from source on each run costs several times more): the
  per-tool-call hooks and the status line, ``cc-continuity launch`` (every ``claude``
  start), the tmux pane's trampoline, the rotator's start, the hooks' slow path (the
  mod calls in at every turn's end), and a verb's own light paths (``cc-continuity <verb>``
  imports that verb's module alone, ``cli.VERBS``: an import no longer costs the other verbs);
* CYCLE: at the top the import fails (proven when it was listed);
* OPTIONAL: a dependency that may be missing where the module runs (a plugin's hooks
  and its ``bin/cc-continuity`` run PATH's ``python3``, without the app copy's
  libtmux, psutil, requests or watchdog), and the code degrades without it;
* SCRIPT: the file, or a module run with ``-m`` below this package, runs as a
  script, so its top level must stay as it is (stdlib only; not the ``-m`` module).

Root modules, ``hooks/`` and the domain's folders are listed as whole modules for now: the fast path and
the domain, to be revisited.  In the other folders each kept import is listed as
(function, what it imports) with its reason, carries a short comment in the source
saying why, and an entry that no longer matches an import fails too.
"""

import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG_DIR = os.path.join(REPO, "cc_continuity")

START_UP, CYCLE, OPTIONAL, SCRIPT = "start-up", "cycle", "optional", "script"
TO_REVISIT = "the fast path and the domain: to be revisited"

# Modules whose function-local imports are not listed one by one (yet).
WHOLE_MODULES = {m: TO_REVISIT for m in (
    "cc_continuity.card", "cc_continuity.rotation.checkpoint", "cc_continuity.rotation.claim", "cc_continuity.cli",
    "cc_continuity.config", "cc_continuity.fastjson", "cc_continuity.snapshot.indexes", "cc_continuity.rotation.handoff",
    "cc_continuity.ledger", "cc_continuity.meter", "cc_continuity.paths", "cc_continuity.safefile",
    "cc_continuity.procs", "cc_continuity.project", "cc_continuity.snapshot.drift",
    "cc_continuity.rotation.revalidation",
    "cc_continuity.rotation.handover", "cc_continuity.session", "cc_continuity.snapshot.job", "cc_continuity.statusline",
    "cc_continuity.hosts.claude.hooks", "cc_continuity.hosts.claude.hooks.notification",
    "cc_continuity.hosts.claude.hooks.post_tool_use", "cc_continuity.hosts.claude.hooks.pre_tool_use",
    "cc_continuity.hosts.claude.hooks.stop_failure",
)}

# watch/ at the top of a verb module: its package, fleet, liveness and service together.
WATCH_ON_EVERY_VERB = (START_UP, "every verb's start: watch/ (fleet, liveness, service) +~5 ms")

# module -> {(function, what it imports): (reason, why)}
KEPT = {
    "cc_continuity.rotation.run": {
        ("_Tail.__init__", "threading"): (START_UP, "run.py is on Gemini's hook path (its caps); a thread only for a "
                                                    "back-end that reads its agent's stderr"),
    },
    "cc_continuity.holds.shell": {
        ("_load", "cc_continuity.deps"): (START_UP, "a classified tool call's first parse only: deps (json, hashlib) "
                                                    "+~6 ms"),
        ("_load", "tree_sitter"): (OPTIONAL, "a binary wheel from the deps' lock; the tokenizer reads without it"),
        ("_load", "tree_sitter_bash._binding.language"): (OPTIONAL, "the grammar, as tree_sitter"),
    },
    "cc_continuity.gitrun": {
        ("run", "subprocess"): (START_UP, "a classified tool call's hook loads it for read() (the hold's git state, "
                                          "posix_spawnp): subprocess +~8 ms, loaded by the bounded runner only"),
    },
    "cc_continuity.deps": {
        ("spawn", "subprocess"): (START_UP, "every prompt of a plugin session loads deps; subprocess +~4 ms, loaded "
                                            "when a build starts (once per plugin and interpreter)"),
        ("stop_builds", "signal"): (START_UP, "every prompt of a plugin session loads deps; signal loads enum "
                                              "(+~12 ms), needed only by uninstall"),
    },
    "cc_continuity.commands.configure": {
        ("window_from_server", "cc_continuity.hosts.servers"): (START_UP, "--window auto only: the hosts' "
                                                                           "server readers"),
        **{("window_from_server", what): (OPTIONAL, "--window auto only: requests (+~90 ms); configure runs on a "
                                                    "Python without our packages, and says so for auto")
           for what in ("cc_continuity.serverwindow.ask", "cc_continuity.serverwindow.shapes")},
    },
    "cc_continuity.hosts.servers": {
        **{("check_server_window", what): (OPTIONAL, "doctor with a model server set only: requests (+~90 ms); "
                                                     "doctor runs on a Python without our packages")
           for what in ("cc_continuity.serverwindow.ask", "cc_continuity.serverwindow.shapes")},
    },
    "cc_continuity.commands.mcp": {
        ("run", "cc_continuity.mcpserver.server"): (OPTIONAL, "the MCP SDK (~1 s, ~65 MB): this verb's only"),
    },
    "cc_continuity.commands.status": {
        ("run_fleet", "cc_continuity.watch.planner"): (
            START_UP, "status's own plain path: the fleet's planner (liveness: psutil; the Brain) +~40 ms, for "
                      "`--all-projects` only"),
    },
    "cc_continuity.hosts.claude.doctor": {
        ("check_shell_reader", "cc_continuity.deps.build"): (
            START_UP, "as check_plugin_packages: only a plugin from a marketplace whose hooks lack the parser"),
    },
    "cc_continuity.hosts.claude.doctor_plugin": {
        ("check_plugin_packages", "cc_continuity.deps.build"): (
            START_UP, "every verb's parser loads doctor's checks: the installers and the index (urllib, html, "
                      "configparser) +~20 ms; only a plugin from a marketplace needs them"),
    },
    "cc_continuity.doctor.system": {
        ("check_watchdog_unit", "cc_continuity.watch.service"): WATCH_ON_EVERY_VERB,
        ("package_version", "importlib.metadata"): (START_UP, "every verb's start (commands/doctor): +~15 ms"),
        ("check_ntfy", "socket"): (START_UP, "every verb's start (commands/doctor): +~5 ms"),
    },
    "cc_continuity.install.app": {
        ("dependency_dists", "importlib.metadata"): (START_UP, "launch and every verb load install/: +~15 ms"),
    },
    "cc_continuity.hosts.codex.files": {
        ("_entry", "cc_continuity.hosts.codex.hooks"): (
            START_UP, "every verb loads install's and doctor's Codex pieces: the Codex hook entry and its rotation imports +~5-7 ms (min "
                      "and median of 15, after the parser); only install, uninstall and doctor of Codex need it"),
    },
    "cc_continuity.hosts.gemini.envfile": {
        ("parse", "re"): (START_UP, "every Gemini hook call looks for a repository's env file; re (7.8-11 ms with -S, "
                                    "-X importtime) only when one is there"),
    },
    "cc_continuity.hosts.gemini.files": {
        ("_entry", "cc_continuity.hosts.gemini.hooks"): (
            START_UP, "every verb loads install's and doctor's Gemini pieces: its hook entry and what it imports, as "
                      "for Codex's; only install, uninstall and doctor of Gemini need it"),
    },
    "cc_continuity.install.bootstrap": {
        ("fill_venv", "cc_continuity.deps.build"): (START_UP, "launch and every verb load install/: the installers "
                                                                "and the index (urllib, html, configparser) +~20 ms; "
                                                                "install.py's only"),
    },
    "cc_continuity.notify": {
        ("format_message", "cc_continuity.redact.redact"): (
            START_UP, "the hooks' push port imports notify even with pushes off: +~20 ms (its rules compile)"),
        ("post", "requests"): (OPTIONAL, "flusher side only; emit must not import it (tests/test_notify.py)"),
        **{("_post_urllib", what): (START_UP, "the flusher's only, without requests: emit is on every hook's path, "
                                              "+~25 ms there") for what in ("http.client", "socket", "urllib.error",
                                                                             "urllib.request")},
    },
    "cc_continuity.rehearse": {
        ("Rehearsal.run", "cc_continuity.rehearse.scripted_model.ScriptedModel"): (
            SCRIPT, "python -m cc_continuity.rehearse.scripted_model imports this package first: imported at "
                    "the top, runpy warns and the module runs twice"),
    },
    "cc_continuity.share": {
        ("after_verified", "cc_continuity.share.publish"): (
            START_UP, "the checkpoint's turn end: publish + subprocess +~10 ms, only when the user shares"),
        **{(fn, "cc_continuity.share.lease"): (
            START_UP, "lease + subprocess +~10 ms: a turn's end only where leases are held, a claim only when a "
                      "candidate checkpoint was published") for fn in ("renew_leases", "claim_gate")},
    },
    "cc_continuity.share.lease": {
        ("_transport", "cc_continuity.share.transport"): (
            START_UP, "a rotation's claim (SessionStart, sharing on) reads share.json only; transport + subprocess "
                      "+~10 ms, loaded when the remote is asked"),
        ("start", "cc_continuity.share.job.start_job"): (START_UP, "subprocess: only when a renewal is due"),
        ("main", "cc_continuity.share.job.behind_the_session"): (START_UP, "the renewal job's own start, as start"),
    },
    "cc_continuity.share.publish": {
        (fn, "cc_continuity.redact"): (START_UP, "the verifying Stop loads publish to start the job: only the job "
                                                 "redacts; its rules compile, +~50 ms")
        for fn in ("_redacted", "publish_commit")
    },
    "cc_continuity.hosts.codex.hooks": {
        # A Codex tool call's hook loads the card, the record and the rollout's tail only (as Claude Code's
        # does); the steps' world (the Codex context, the project, config, effects: ~80 ms with what they
        # import) loads when something must be decided, and each step's module with its event.
        **{(fn, what): (START_UP, "a Codex tool call's hook: the steps' world +~80 ms, only when it must decide")
           for fn, what in (("answer", "cc_continuity.hosts.codex.host.CodexContext"),
                            ("_pre_tool_use", "cc_continuity.rotation.context"),
                            ("_pre_tool_use", "cc_continuity.rotation.toolcall"),
                            ("_settle_exits", "cc_continuity.rotation.context"))},
        **{("answer", "cc_continuity.rotation." + mod): (
            START_UP, "each event loads its own step's module (start: claim, revalidation; turn: checkpoint, "
                      "handover) +~9 ms") for mod in ("start", "turn")},
    },
    "cc_continuity.hosts.gemini.hooks": {
        # As Codex's: a tool call's hook loads the card, the record and the session file's tail only
        # (hosts/toolpath.py); the steps' world loads when something must be decided, each step's module with
        # its event.
        **{(fn, what): (START_UP, "a Gemini tool call's hook: the steps' world +~80 ms, only when it must decide")
           for fn, what in (("answer", "cc_continuity.hosts.gemini.host.GeminiContext"),
                            ("_tool", "cc_continuity.rotation.toolcall"),
                            ("_before_tool", "cc_continuity.rotation.context"),
                            ("_before_tool", "cc_continuity.rotation.toolcall"),
                            )},
        **{(fn, "cc_continuity.rotation." + mod): (
            START_UP, "each event loads its own step's module (start: claim, revalidation; turn: checkpoint, "
                      "handover) +~9 ms") for fn, mod in (("answer", "start"), ("_after_agent", "context"),
                                                            ("_after_agent", "turn"), ("answer", "turn"))},
    },
    "cc_continuity.hosts.toolpath": {
        **{("after_tool_steps", what): (START_UP, "a tool call's hook of a per-call host: the steps' world +~80 ms, "
                                                  "only when it must decide") for what in (
            "cc_continuity.holds.effects", "cc_continuity.rotation.context", "cc_continuity.rotation.turn")},
    },
    "cc_continuity.hosts": {
        # Every host's hook entry runs through it on every tool call: what only a failed call or one that
        # answers needs loads then.
        ("run_hook", "cc_continuity.log"): (START_UP, "after the answer is out: log +~2 ms the call does not wait for"),
        ("run_hook", "cc_continuity.faults"): (START_UP, "a call that answers only: a module more on a tool call's "
                                                     "steady state costs ~0.3 M instructions (P1 +0.8 %)"),
        **{(fn, "cc_continuity.errors.BudgetExceeded"): (
            START_UP, "a failed call only: a module more on a tool call's steady state costs ~0.3 M instructions "
                      "(P1 +0.8 %)") for fn in ("_on_alarm", "failed")},
    },
    "cc_continuity.hosts.ports": {
        ("HookPorts.deliver", "cc_continuity.notify"): (
            START_UP, "the mod calls in at every turn's end: notify +~3 ms, loaded when a push goes out"),
        ("HookPorts.can_drive", "cc_continuity.tmux"): (
            START_UP, "the mod calls in at every turn's end: tmux (pane) +~5 ms, loaded when "
                      "a hand-over needs a driver"),
        ("HookPorts.start_rotator", "cc_continuity.tmux.rotator"): (
            START_UP, "the rotator's module (subprocess, notify) +~8 ms, loaded when one is started"),
        **{("HookPorts." + fn, "cc_continuity.share"): (
            START_UP, "share/ is the optional feature: loaded when the user shares, where leases are held, or "
                      "when a claim's candidate was published") for fn in ("after_verified", "renew_leases", "claim_gate")},
    },
    "cc_continuity.hosts.claude.hooks.mod": {
        ("compact", "cc_continuity.rotation.turn"): (
            START_UP, "the mod calls in at every turn's end: turn + start + claim + effects + revalidation +~9 ms, "
                      "needed only when it skips a compaction"),
        ("_last_request", "cc_continuity.rotation.checkpoint"): (
            START_UP, "the mod's every turn: checkpoint +~1 ms, needed only when it skips a compaction"),
    },
    "cc_continuity.rotation.toolcall": {
        ("_forget_wait", "cc_continuity.snapshot.job.read_result"): (
            START_UP, "a decided tool call: the snapshot job (subprocess, git) +~8 ms, only once a snapshot's "
                      "wait ends"),
    },
    "cc_continuity.rotation.turn": {
        ("_turn_snapshot", "cc_continuity.snapshot.job"): (
            START_UP, "every turn's end: the snapshot job (subprocess, git) +~8 ms, only when turn snapshots run"),
        **{(fn, "cc_continuity.rotation.handoff"): (
            START_UP, "every turn's end: the handoff's patterns compile (re) +~6 ms, only at the steps that read "
                      "or ask for a handoff") for fn in ("request_handoff", "check_handoff", "verify_written",
                                                         "_claims_contradicted", "rotate_instead_of_compacting")},
    },
    "cc_continuity.hosts.claude.launch": {
        **{(fn, what): (SCRIPT, "the trampoline runs this file with python -I: no package, stdlib only")
           for fn, what in (("plan", "cc_continuity.config"), ("plan", "cc_continuity.project"),
                            ("plan", "cc_continuity.hosts.claude.executable.find_real_claude"),
                            ("_plan", "cc_continuity.tmux.pane.tmux_name"), ("_plan", "cc_continuity.hosts.claude.launchenv"),
                            ("running_sessions", "cc_continuity.session"),
                            ("running_sessions", "cc_continuity.procs.pid_alive"))},
    },
    "cc_continuity.watch.liveness": {
        **{(fn, "psutil"): (OPTIONAL, "`status` loads this module (via fleet) and runs without psutil; ~11 ms")
           for fn in ("create_time_skew", "ProcessTable._entry", "ProcessTable.tool_running")},
        ("TranscriptWatch.start", "watchdog.observers.Observer"): (OPTIONAL, "the daemon's only; ~14 ms"),
        ("TranscriptWatch._handler", "watchdog.events.FileSystemEventHandler"): (OPTIONAL, "the daemon's only"),
    },
    "cc_continuity.watch.window": {
        ("check", "cc_continuity.serverwindow.ask"): (START_UP, "requests (+~90 ms): the daemon's only, once the "
                                                                "server is up"),
    },
    "cc_continuity.watch.probe": {
        ("Prober._call", "requests"): (START_UP, "status --all-projects loads the probe: +~90 ms; daemon only"),
        ("Prober._read", "requests"): (START_UP, "status --all-projects loads the probe: +~90 ms; daemon only"),
    },
}


def _module_name(path, root=REPO):
    rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def _absolute(node, module, is_package):
    """The module an ``ImportFrom`` reads from, spelled absolutely."""
    if not node.level:
        return node.module
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def local_imports(path, root=REPO):
    """``[(function qualname, what it imports, line)]`` for every import inside a function of ``path``."""
    module = _module_name(path, root)
    is_package = path.endswith("__init__.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = []

    def visit(node, scope, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, scope + [child.name], in_function or not isinstance(child, ast.ClassDef))
                continue
            if in_function and isinstance(child, ast.Import):
                out.extend((".".join(scope), a.name, child.lineno) for a in child.names)
            elif in_function and isinstance(child, ast.ImportFrom):
                source = _absolute(child, module, is_package)
                out.extend((".".join(scope), source + "." + a.name, child.lineno) for a in child.names)
            visit(child, scope, in_function)

    visit(tree, [], False)
    return out


def _all_local_imports():
    found = {}
    for d, dirs, files in os.walk(PKG_DIR):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(d, f)
                found[_module_name(path)] = (path, local_imports(path))
    return found


def _commented(lines, lineno):
    """The import at ``lineno`` (1-based) has a comment on its line or in the comment/import lines just above."""
    i = lineno - 1
    if "#" in lines[i]:
        return True
    i -= 1
    while i >= 0:
        text = lines[i].strip()
        if text.startswith("#"):
            return True
        if not (text.startswith("import ") or text.startswith("from ")):
            return False
        i -= 1
    return False


def test_the_walk_sees_nested_and_relative_imports(tmp_path):
    pkg = tmp_path / "cc_continuity" / "demo"
    pkg.mkdir(parents=True)
    src = pkg / "mod.py"
    src.write_text("import os\n\n"
                   "def f():\n    from .. import config\n    from .sub import thing as t\n\n"
                   "class C:\n    import json\n\n    def m(self):\n        def inner():\n            import psutil\n")
    assert local_imports(str(src), root=str(tmp_path)) == [
        ("f", "cc_continuity.config", 4), ("f", "cc_continuity.demo.sub.thing", 5), ("C.m.inner", "psutil", 12)]


def test_no_function_local_import_outside_the_allow_list():
    unlisted = []
    for module, (path, found) in _all_local_imports().items():
        if module in WHOLE_MODULES:
            continue
        kept = KEPT.get(module, {})
        for fn, what, line in found:
            if (fn, what) not in kept:
                unlisted.append("%s:%d %s imports %s" % (os.path.relpath(path, REPO), line, fn, what))
    assert not unlisted, (
        "function-local imports that are not a listed decision; move them to the top of the file, or, when "
        "one is needed (start-up cost > ~5 ms on a measured path, a proven cycle, an optional dependency, a "
        "file run as a script), add it to KEPT in tests/test_imports.py with its reason:\n  " + "\n  ".join(unlisted))


def test_every_kept_import_is_still_there_and_says_why_in_the_source():
    found = _all_local_imports()
    stale, silent = [], []
    for module, kept in KEPT.items():
        assert module not in WHOLE_MODULES, module
        path, imports = found.get(module, (None, []))
        at = {(fn, what): line for fn, what, line in imports}
        lines = open(path, encoding="utf-8").read().splitlines() if path else []
        for key, (reason, why) in kept.items():
            assert reason in (START_UP, CYCLE, OPTIONAL, SCRIPT) and why, (module, key)
            if key not in at:
                stale.append("%s: %s imports %s" % (module, *key))
            elif not _commented(lines, at[key]):
                silent.append("%s:%d %s imports %s" % (os.path.relpath(path, REPO), at[key], *key))
    assert not stale, "listed in KEPT but no longer imported there (take it off the list):\n  " + "\n  ".join(stale)
    assert not silent, "a kept function-local import needs a short comment saying why:\n  " + "\n  ".join(silent)


DOMAIN_FOLDERS = ("snapshot", "rotation")  # (with the root and Claude Code's hooks: the fast path and the domain)
HOOKS = "cc_continuity.hosts.claude.hooks"


def test_whole_modules_are_the_root_hooks_and_the_domain_only():
    for module in WHOLE_MODULES:
        parts = module.split(".")
        assert len(parts) == 2 or parts[1] in DOMAIN_FOLDERS or module.startswith(HOOKS), module
