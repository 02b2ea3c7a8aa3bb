"""The layers, as built: who may import whom (docs/ARCHITECTURE.md, "Layers").

Every import in the package counts, function-local ones included: a lazy import
still ties the layers.  Four layers, each import pointing down:

1. the root: the foundation, and what a tool call loads (the kernel: card, meter,
   session, ledger ...); it imports only the root;
2. the domain, one folder each: ``snapshot/`` (the work-tree commit), ``rotation/``
   (the protocol's steps and what they build on), ``redact/`` (secrets masked before
   text leaves the machine);
3. the adapters, one folder per thing they talk to (tmux, ntfy, an agent host ...),
   each importing the domain and the adapters listed for it; they are ranked
   (:data:`ADAPTER_RANKS`): an adapter imports only adapters of a lower rank;
4. the entry points (``cli``, ``statusmain``, ``commands/``).

No module imports itself back through others (no circle, lazy imports included), and no
two folders import each other.  A new edge is a decision: add it here, with why.
"""

import ast
import os
import shutil

PKG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cc_continuity")

# Entry points: run as commands, they put the layers together.
ENTRY = {"cli", "__main__", "statusmain"}
DOMAIN = ("snapshot", "rotation", "redact")
# Besides the root and itself, what each folder may import.
ALLOWED = {
    # -- the domain
    "snapshot": set(),                 # git and the root: nothing of the rotation
    "redact": set(),                   # secrets masked before text leaves: the standard library only, no root module
    "holds": {"deps"},                 # the shell reading and what repeats would harm; tree-sitter where deps put it
    "rotation": {"snapshot", "holds", "redact"},  # a checkpoint holds a work-tree snapshot (its job, its ref, its
                                       # diff); handoffs, bootstraps and snapshot messages are redacted;
                                       # the host it runs in is a port (rotation/host.py), never imported
    # -- optional features (above the domain; nothing below imports them: the protocol reaches them through ports)
    "mcpserver": {"rotation", "holds", "snapshot", "redact"},  # the MCP server (optional: the SDK): tools on the
                                       # project's records; only its command imports it
    "share": {"rotation", "holds", "redact"},  # sharing through a git remote: it publishes checkpoints (their
                                       # manifest, effect records, the handoff redacted once more), claims one
                                       # (the claim's bootstrap, revalidation)
    # -- adapters
    "deps": {"redact"},                # the optional packages: where they are for this interpreter, their build
                                       # (pip, uv, the package index: its URL and a failed build's output shown
                                       # redacted); the root and redact/ only, so any folder may ask it
    "hosts": {"rotation", "holds", "snapshot", "share", "tmux", "notify", "deps", "install", "doctor",
              "serverwindow"},
                                       # each agent is one folder (hosts/claude, hosts/codex): it fills the rotation's
                                       # ports from its own files and process, and holds its hook entry (one step per
                                       # event), for a hook call pushes and the tmux rotator; a tool-call step waits
                                       # for a snapshot job, records and holds side effects; a plugin session starts
                                       # its packages' build; its install piece writes its files with install/'s
                                       # library, its doctor checks are rows on doctor/'s; setup.py and checkup.py
                                       # put the hosts' pieces together for the install and doctor verbs
    "serverwindow": set(),             # the window a model server reports (network; configure, never a hook): the
                                       # root only; each host says where its server is (hosts/<name>/modelserver.py)
    "notify": {"deps", "redact"},      # the push spool and its flusher talk to the ntfy server and the root only
                                       # (the flusher starts with the optional packages where they are); a push's
                                       # text is redacted before it is spooled
    "tmux": {"rotation", "notify", "deps"},  # the rotator is the tmux hand-over (rotation/handover.py's plan);
                                       # a failed one pushes; a host's TUI is read by the screen reader its plan
                                       # names (hosts/ports.py writes it: tmux imports no host)
    "hooks": {"hosts"},                # the old name of Claude Code's hook entry (hosts/claude/hooks), kept one release
    "watch": {"rotation", "share", "install", "tmux", "notify", "redact", "serverwindow"},  # readings and hand-over plans; service
                                       # files name the installed launcher (install.app); it types into panes (a log
                                       # digest redacted), re-spawns a rotator
    "install": {"rotation", "share", "deps"},  # the library of every host's install piece (hosts/<name>/install.py,
                                       # given to it by hosts/setup.py: it names no host); uninstall --purge names
                                       # what stays on share remotes; install.py fills its venv the way a plugin
                                       # builds its packages
    "doctor": {"install", "notify", "watch"},  # the library of the report (each host's checks are in its folder,
                                       # the selection in hosts/checkup.py: it names no host); it reads what install
                                       # wrote and the watchdog's service; --notify-test pushes once
    "rehearse": {"rotation", "install", "tmux"},  # it installs into a throwaway HOME and drives a real pane
    "commands": {"rotation", "snapshot", "share", "hosts", "install", "watch", "rehearse", "tmux", "notify",
                 "doctor", "redact", "serverwindow", "mcpserver", "holds"},  # holds: `repeat <code>`, the user's
}

# The adapters ranked, lowest first: an adapter imports only adapters of a lower rank, so none of one rank
# imports another of it and no two import each other.  (Below them all the domain and share/; above, the entry
# points.)
ADAPTER_RANKS = (
    ("deps", "serverwindow"),  # the optional packages: any folder may ask where they are; a server's window
    ("notify",),            # pushes
    ("tmux", "install"),    # the pane and the rotator (a host's screen reader comes in its plan); install's library
    ("watch", "rehearse"),  # the watchdog (its service runs the installed launcher); a rehearsal (a throwaway install)
    ("doctor",),            # the report's library (it checks the watchdog's service)
    ("hosts",),             # each agent one folder: its hook entry, install piece and doctor checks on the above
    ("hooks",),             # the old name of Claude Code's hook entry
)
RANK = {folder: n for n, folders in enumerate(ADAPTER_RANKS) for folder in folders}


def _area(module):
    """The area of a dotted module name below the package: root, entry, or its folder."""
    parts = module.split(".")[1:]
    if not parts:
        return "root"
    if parts[0] in ENTRY and len(parts) == 1:
        return "entry"
    if os.path.isdir(os.path.join(_area.pkg, parts[0])):
        return parts[0]
    return "root"


_area.pkg = PKG_DIR


def _imports(pkg_dir=PKG_DIR):
    """(importing module, imported module) for every import of the package by the package."""
    top = os.path.dirname(pkg_dir)
    out = []
    for d, _dirs, files in os.walk(pkg_dir):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, top)[:-3].replace(os.sep, ".")
            module = rel[: -len(".__init__")] if rel.endswith(".__init__") else rel
            package = module if f == "__init__.py" else module.rsplit(".", 1)[0]
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = package.split(".")[: len(package.split(".")) - node.level + 1]
                        target = ".".join(base + ([node.module] if node.module else []))
                    elif node.module and node.module.split(".")[0] == "cc_continuity":
                        target = node.module
                    else:
                        continue
                    for alias in node.names:
                        sub = target + "." + alias.name
                        # `from .. import hooks` names a module; `from ..x import f` a name in x.
                        is_module = os.path.exists(os.path.join(top, *sub.split(".")) + ".py") \
                            or os.path.isdir(os.path.join(top, *sub.split(".")))
                        out.append((module, sub if is_module else target))
                elif isinstance(node, ast.Import):
                    out.extend((module, a.name) for a in node.names if a.name.split(".")[0] == "cc_continuity")
    return out


def wrong_edges(edges):
    """The imports that do not point down the layers."""
    wrong = []
    for src, dst in edges:
        a, b = _area(src), _area(dst)
        if a == "entry" or a == b:
            continue
        if a == "root" and b != "root":
            wrong.append("%s -> %s (the root imports only the root)" % (src, dst))
        elif b != "root" and (b == "entry" or b not in ALLOWED.get(a, set())):
            wrong.append("%s -> %s (%s may not import %s)" % (src, dst, a, b))
    return sorted(set(wrong))


def rank_errors(edges):
    """The imports between adapters that do not go to a lower rank, and every two folders that import each
    other."""
    wrong, pairs = [], set()
    for src, dst in edges:
        a, b = _area(src), _area(dst)
        if a == b or "root" in (a, b) or "entry" in (a, b):
            continue
        pairs.add((a, b))
        if a in RANK and b in RANK and RANK[b] >= RANK[a]:
            wrong.append("%s -> %s (%s, rank %d, may import only adapters below it; %s is rank %d)"
                         % (src, dst, a, RANK[a] + 1, b, RANK[b] + 1))
    wrong += ["%s <-> %s (two folders import each other)" % (a, b) for a, b in pairs if (b, a) in pairs and a < b]
    return sorted(set(wrong))


def circles(edges):
    """Every group of modules that import each other, directly or through others (Tarjan's SCCs > 1)."""
    graph = {}
    for src, dst in edges:
        if src != dst and not dst.startswith(src + "."):  # (a package importing its own submodule is not a loop)
            graph.setdefault(src, set()).add(dst)
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in list(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_walk_sees_the_package():
    edges = _imports()
    assert len(edges) > 200
    assert any(src == "cc_continuity.hosts.claude.hooks.stop" for src, _ in edges)
    assert _area("cc_continuity.hosts.claude.hooks.stop") == "hosts" and _area("cc_continuity.meter") == "root"
    assert _area("cc_continuity.rotation.protocol") == "rotation"
    assert _area("cc_continuity.cli") == "entry" and _area("cc_continuity.rehearse") == "rehearse"


def test_every_import_runs_down_the_layers():
    wrong = wrong_edges(_imports())
    assert not wrong, "\n".join(wrong)


def test_only_its_command_imports_the_mcp_server_and_only_it_imports_the_sdk():
    """The MCP SDK (~1 s, ~65 MB) is the server's own: no hook, no status line, no other verb loads it."""
    assert [a for a, allowed in ALLOWED.items() if "mcpserver" in allowed] == ["commands"]
    sdk = []
    for d, _dirs, files in os.walk(PKG_DIR):
        for f in (f for f in files if f.endswith(".py")):
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
            names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level and n.module]
            if any(x == "mcp" or x.startswith("mcp.") for x in names):
                sdk.append(os.path.relpath(os.path.join(d, f), PKG_DIR))
    assert sdk == [os.path.join("mcpserver", "server.py")], sdk


def test_the_adapters_are_ranked_and_each_import_goes_down():
    adapters = set(ALLOWED) - set(DOMAIN) - {"holds", "share", "mcpserver", "commands"}
    assert sorted(RANK) == sorted(adapters), "every adapter folder has one rank"
    upward = ["%s -> %s" % (a, b) for a in RANK for b in ALLOWED[a] if b in RANK and RANK[b] >= RANK[a]]
    assert not upward, "ALLOWED grants an import that is not to a lower rank: " + ", ".join(upward)
    wrong = rank_errors(_imports())
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_back():
    found = circles(_imports())
    assert not found, "import circles (lazy imports count):\n" + "\n".join(" <-> ".join(g) for g in found)


def test_nothing_but_the_cli_imports_a_verb():
    wrong = sorted({"%s -> %s" % (s, d) for s, d in _imports()
                    if _area(d) == "commands" and _area(s) not in ("entry", "commands")})
    assert not wrong, "\n".join(wrong)


def _planted(tmp_path, path, line):
    """A copy of the package with ``line`` added inside a function of ``path``: the imports it has then."""
    copy = tmp_path / "cc_continuity"
    shutil.copytree(PKG_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / path, "a", encoding="utf-8") as f:
        f.write("\n\ndef _planted():\n    %s\n" % line)
    return _imports(str(copy))


def test_a_planted_upward_import_fails_the_layers(tmp_path):
    edges = _planted(tmp_path, "meter.py", "from .rotation import turn  # noqa")
    assert "cc_continuity.meter -> cc_continuity.rotation.turn (the root imports only the root)" in \
        wrong_edges(edges)
    edges = _planted(tmp_path / "b", "snapshot/job.py", "from ..rotation import claim  # noqa")
    assert "cc_continuity.snapshot.job -> cc_continuity.rotation.claim (snapshot may not import rotation)" in \
        wrong_edges(edges)


def test_a_planted_import_up_the_ranks_or_back_fails(tmp_path):
    edges = _planted(tmp_path, "tmux/rotator.py", "from ..hosts.codex import screen  # noqa")
    assert "cc_continuity.tmux.rotator -> cc_continuity.hosts.codex.screen (tmux, rank 3, may import only " \
        "adapters below it; hosts is rank 6)" in rank_errors(edges)
    assert "hosts <-> tmux (two folders import each other)" in rank_errors(edges)
    edges = _planted(tmp_path / "b", "install/plan.py", "from ..watch import service  # noqa")
    assert "cc_continuity.install.plan -> cc_continuity.watch.service (install, rank 3, may import only adapters " \
        "below it; watch is rank 4)" in rank_errors(edges)
    assert "install <-> watch (two folders import each other)" in rank_errors(edges)
    edges = _planted(tmp_path / "c", "rotation/turn.py", "from ..share import publish  # noqa")
    assert "rotation <-> share (two folders import each other)" in rank_errors(edges)  # (outside the ranks too)


def test_a_planted_lazy_circle_fails(tmp_path):
    edges = _planted(tmp_path, "ledger.py", "from . import session  # noqa")  # session imports ledger at its top
    assert ["cc_continuity.ledger", "cc_continuity.session"] in circles(edges)
    assert not wrong_edges(edges)  # within the root: only the circle test sees it
