"""Status line entry point as installed: ``python -S .../cc_continuity/statusmain.py``."""
import sys

_pkg = __file__.rpartition("/")[0]
_parent = _pkg.rpartition("/")[0] or "/"
sys.path[0] = _parent
sys.path.append(_parent + "/lib")
try:
    from cc_continuity.statusline import main
except BaseException:
    sys.exit(0)
main()
