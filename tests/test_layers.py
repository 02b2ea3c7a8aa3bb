"""The layers, as built: who may import whom (docs/ARCHITECTURE.md, "Layers").

Every import in the package counts, function-local ones included: a lazy import
still ties the layers.  The root holds the foundation, the domain and what the
per-tool-call path loads (the status line); it imports only itself.  Each folder
is named after what it talks to (tmux, ntfy, Claude Code's hooks, ...) and
imports the root, itself and the folders listed for it; nothing imports
``commands/`` but the CLI.  A new edge is a decision: add it here, with why.
"""

import ast
import os

PKG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cc_continuity")

# Entry points: run as commands, they put the layers together.
ENTRY = {"cli", "__main__", "statusmain"}
# Besides the root and itself, what each area may import.
ALLOWED = {
    "root": {"snapshot"},              # (until the rotation domain moves into its own folder: the next commits)
    "snapshot": set(),                 # the work-tree commit, its detached job and retention: git and the root
    "notify": set(),                   # the push spool and its flusher talk to the ntfy server and the root only
    "tmux": {"notify"},                # a failed rotation is never silent: the rotator sends the urgent push
    "hooks": {"tmux", "notify"},       # Stop starts the rotator and asks whether tmux can drive (tmux.can_drive);
                                       # lifecycle pushes go out from the hook that saw the step
    "watch": {"install", "tmux", "notify"},  # service files name the installed launcher (install.app); the
                                       # watchdog types into panes, re-spawns a rotator from its saved plan, pushes
    "hosts": set(),                    # each agent's wire and files (hosts/codex: the rollout reader, the hook
                                       # payloads and answers) is pure code over the root (meter's bounded tail read)
    "install": set(),                  # it writes settings.json, blocks, the wrapper and the app copy: root only
    "doctor": {"install", "hooks", "notify"},  # it reads what install wrote (install.settings, .manifest, ...),
                                       # checks the hook table's events (hooks.EVENT_OF), --notify-test pushes once
    "rehearse": {"install", "tmux"},   # it installs into a throwaway HOME, as the user would, and drives a real pane
    "commands": {"hooks", "install", "watch", "rehearse", "tmux", "notify", "doctor"},
}
# Root modules that belong to a feature area (until they move into its folder): none left.
AREA_OF_ROOT_MODULE: dict = {}


def _area(module):
    """The area of a dotted module name below the package."""
    parts = module.split(".")[1:]
    if not parts:
        return "root"
    if parts[0] in ENTRY and len(parts) == 1:
        return "entry"
    if os.path.isdir(os.path.join(PKG_DIR, parts[0])):
        return parts[0]
    return AREA_OF_ROOT_MODULE.get(parts[0], "root")


def _imports():
    """(importing module, imported module) for every import of the package by the package."""
    out = []
    for d, _dirs, files in os.walk(PKG_DIR):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, os.path.dirname(PKG_DIR))[:-3].replace(os.sep, ".")
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
                        is_module = os.path.exists(os.path.join(os.path.dirname(PKG_DIR), *sub.split(".")) + ".py") \
                            or os.path.isdir(os.path.join(os.path.dirname(PKG_DIR), *sub.split(".")))
                        out.append((module, sub if is_module else target))
                elif isinstance(node, ast.Import):
                    out.extend((module, a.name) for a in node.names if a.name.split(".")[0] == "cc_continuity")
    return out


def test_the_walk_sees_the_package():
    edges = _imports()
    assert len(edges) > 200
    assert ("cc_continuity.hooks.stop", "cc_continuity.session") in edges or any(
        src == "cc_continuity.hooks.stop" for src, _ in edges)
    assert _area("cc_continuity.hooks.stop") == "hooks" and _area("cc_continuity.meter") == "root"
    assert _area("cc_continuity.cli") == "entry" and _area("cc_continuity.rehearse") == "rehearse"


def test_every_import_runs_down_the_layers():
    wrong = []
    for src, dst in _imports():
        a, b = _area(src), _area(dst)
        if a == "entry" or b == "root" or a == b:
            continue
        if b == "entry" or b not in ALLOWED.get(a, set()):
            wrong.append("%s -> %s (%s may not import %s)" % (src, dst, a, b))
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_nothing_but_the_cli_imports_a_verb():
    wrong = sorted({"%s -> %s" % (s, d) for s, d in _imports()
                    if _area(d) == "commands" and _area(s) not in ("entry", "commands")})
    assert not wrong, "\n".join(wrong)
