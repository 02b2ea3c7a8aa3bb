"""``cc-continuity on``: enable rotation for the current project."""

from .. import config
from ._util import current_project, die


def register(sub):
    p = sub.add_parser("on")
    p.set_defaults(func=run)


def toggle(enabled):
    """Set ``enabled`` in the user's own per-project file (state dir; the repository is not written)."""
    proj = current_project()
    try:
        config.load(proj.root)  # a broken layer is named before anything is written
        config.update_project(proj.root, {"enabled": enabled})
    except config.ConfigError as e:
        die(str(e))
    print("cc-continuity %s for %s (%s)" % ("enabled" if enabled else "disabled", proj.slug,
                                            config.user_project_file(proj.root)))
    try:
        cfg = config.load(proj.root)
    except config.ConfigError as e:
        die(str(e))
    if bool(cfg["enabled"]) != enabled:
        print("note: still %s, by %s" % ("enabled" if cfg["enabled"] else "disabled", cfg.source("enabled")))
    return 0


def run(args):
    return toggle(True)
