"""``cc-continuity on``: enable rotation for the current project."""

from .. import config
from ._util import current_project, die


def register(sub):
    p = sub.add_parser("on", help="enable rotation for this project")
    p.set_defaults(func=run)


def toggle(enabled):
    proj = current_project()
    try:
        config.update_project(proj.root, {"enabled": enabled})
    except config.ConfigError as e:
        die(str(e))
    print("cc-continuity %s for %s (%s)" % ("enabled" if enabled else "disabled", proj.slug,
                                            config.project_file(proj.root)))
    return 0


def run(args):
    return toggle(True)
