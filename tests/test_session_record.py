"""The session record's keys have one place: ``session.Record``.

Every key the package reads or writes on a session record (``rec["k"]``, ``rec.get("k")``,
``rec.pop("k")``, ``rec["k"] = ...``, ``rec.update(k=...)``, and the keyword fields of
``session.transition`` / ``session.new_record``) must be declared there, with its type
and what it holds: a new key is a visible decision, not a stray string.

Found by reading the source (AST), not by running it.  A record is a variable named
``rec``, ``prec``, ``prev``, ``srec`` or ``record``; the same names also hold ledger rows
and the install record, which are told apart below (a row has an ``"ev"`` key).
"""

import ast
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG_DIR = os.path.join(REPO, "cc_continuity")

NAMES = {"rec", "prec", "prev", "srec", "record"}
# Not session records under these names: the ledger's own lines, the install record.
OTHER_MODULES = {"ledger.py": "ledger lines", "install": "the install record (install.json)",
                 "hosts/claude/install.py": "the install record's Claude Code part",
                 "hosts/codex/install.py": "the install record's Codex part",
                 "hosts/gemini/install.py": "the install record's Gemini part",
                 "hosts/gemini/files.py": "the install record's Gemini settings part"}
# Functions whose record-named variable is a ledger row though it never names "ev" there.
ROWS = {("stop_failure.py", "handle"): "the stop_failure row stop_failure.record() built",
        ("stop_failure.py", "slow"): "the same row, on the slow path",
        ("liveness.py", "_percent"): "a ledger row's percent"}
# Parameters of the calls whose other keywords are record fields.
FIELD_CALLS = {"transition": {"sdir", "rec", "dst", "why"}, "new_record": {"number", "name", "session_id", "state"}}


def declared_keys():
    """The keys ``session.Record`` declares (read from the source: it exists for the type checker only)."""
    with open(os.path.join(PKG_DIR, "session.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Record":
            return {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    raise AssertionError("session.Record is gone")


def _own_nodes(fn):
    """The nodes of a function (or module) body, not those of the functions defined inside it."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _str(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _access(node):
    """``(variable, key)`` when ``node`` touches a key of a record-named variable, else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in NAMES:
        key = _str(node.slice)
        return (node.value.id, key) if key else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id in NAMES and node.func.attr in ("get", "pop", "setdefault") and node.args:
        key = _str(node.args[0])
        return (node.func.value.id, key) if key else None
    return None


def _keywords(node):
    """``(variable or None, key)`` for each record field a call passes by keyword."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
        return []
    name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
    if isinstance(node.func, ast.Attribute) and name == "update" and isinstance(node.func.value, ast.Name) \
            and node.func.value.id in NAMES:
        return [(node.func.value.id, k.arg) for k in node.keywords if k.arg]
    if name in FIELD_CALLS:
        return [(None, k.arg) for k in node.keywords if k.arg and k.arg not in FIELD_CALLS[name]]
    return []


def _rows(nodes):
    """The record-named variables of a scope that hold ledger rows: they name ``"ev"``, or got a dict with it."""
    rows = set()
    for node in nodes:
        got = _access(node)
        if got and got[1] == "ev":
            rows.add(got[0])
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict) \
                and any(_str(k) == "ev" for k in node.value.keys if k is not None):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # (row: "dict[...]" = {...})
            rows.update(t.id for t in targets if isinstance(t, ast.Name) and t.id in NAMES)
    return rows


def record_keys():
    """``{key: ["module.py:line", ...]}`` for every record key the package touches."""
    found: dict = {}
    for d, _dirs, files in os.walk(PKG_DIR):
        for f in files:
            path = os.path.join(d, f)
            rel = os.path.relpath(path, PKG_DIR)
            if not f.endswith(".py") or rel.split(os.sep)[0] in OTHER_MODULES or rel in OTHER_MODULES:
                continue
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            scopes = [("<module>", tree)] + [(n.name, n) for n in ast.walk(tree)
                                             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for name, scope in scopes:
                if (f, name) in ROWS:
                    continue
                nodes = list(_own_nodes(scope))
                rows = _rows(nodes)
                for node in nodes:
                    got = [_access(node)] + _keywords(node)
                    for var, key in filter(None, got):
                        if var not in rows:
                            found.setdefault(key, []).append("%s:%d" % (rel, node.lineno))
    return found


def test_every_record_key_is_declared_in_session_record():
    declared = declared_keys()
    undeclared = {k: v for k, v in record_keys().items() if k not in declared}
    assert not undeclared, "keys used on session records but not declared in session.Record:\n" + "\n".join(
        "  %s: %s" % (k, ", ".join(sorted(v)[:5])) for k, v in sorted(undeclared.items()))


def test_the_scan_sees_the_records():
    """A scanner that found nothing would pass the test above: it finds the keys every part uses."""
    found = record_keys()
    assert {"state", "checkpoint", "successor", "pid", "levels_notified", "handoff_tries"} <= set(found)
    assert any(p.startswith("rotation/claim.py:") for p in found["successor"])
    assert sum(len(v) for v in found.values()) > 150
    assert "ev" not in found and "torn_bytes" not in found  # ledger rows are not records
    assert "original_known" not in found  # nor is the install record


def test_record_declares_what_new_record_writes(tmp_path):
    from cc_continuity import session

    rec = session.new_record(7, "p-007", "sid", project_root="/r")
    assert set(rec) <= declared_keys()


def test_the_record_type_costs_the_hot_path_nothing():
    """Record exists for the type checker: importing session loads no ``typing``."""
    code = ("import sys\nsys.path.insert(0, %r)\nbefore = set(sys.modules)\nimport cc_continuity.session\n"
            "print(sorted(set(sys.modules) - before))" % REPO)
    res = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    new = set(ast.literal_eval(res.stdout))
    assert "typing" not in new and new <= {"cc_continuity", "cc_continuity.session", "cc_continuity.fastjson",
                                           "cc_continuity.ledger", "_json", "posix", "time"}, new
