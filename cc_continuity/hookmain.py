"""Hook entry point as installed in settings.json: ``python -S .../cc_continuity/hookmain.py <Event>``.

Runs without ``site`` for speed, so it puts its own package (and a vendored
``lib/`` beside it, if any) on ``sys.path`` by string arithmetic alone.
"""
import sys

_pkg = __file__.rpartition("/")[0]
_parent = _pkg.rpartition("/")[0] or "/"
sys.path[0] = _parent
sys.path.append(_parent + "/lib")
try:
    from cc_continuity.hooks import main
except BaseException:  # a broken install must never break Claude Code
    sys.exit(0)
main(sys.argv[1:])
