#!/usr/bin/env python3
"""Install cc-continuity from this checkout:  python3 install.py [cc-continuity install options]

Works on a distribution's Python (PEP 668, no pip needed): see
cc_continuity/install/bootstrap.py.  Needs Python >= 3.11, git and tmux.
"""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Nothing of this run writes bytecode into the checkout: a plugin made from it (a directory
# marketplace links it live) would carry the __pycache__ folders.  The app copy that
# `cc-continuity install` makes is byte-compiled on purpose (install/app.py).
sys.dont_write_bytecode = True

if sys.version_info < (3, 11):
    # macOS's /usr/bin/python3 is 3.9: a newer one may be on PATH under its own name.
    for name in ("python3.14", "python3.13", "python3.12", "python3.11"):
        other = shutil.which(name)
        if other and os.environ.get("CC_CONTINUITY_BOOTSTRAP_REEXEC") != "1":
            os.environ["CC_CONTINUITY_BOOTSTRAP_REEXEC"] = "1"
            os.execv(other, [other, "-B", os.path.abspath(__file__)] + sys.argv[1:])
    sys.stderr.write("install.py: cc-continuity needs Python >= 3.11 (this is %d.%d); install one, e.g.\n"
                     "    sudo apt-get install python3      (Debian 12, Ubuntu 24.04: 3.11, 3.12)\n"
                     "    brew install python@3.12          (macOS)\n" % sys.version_info[:2])
    sys.exit(1)

sys.path.insert(0, HERE)
from cc_continuity import cli  # noqa: E402
from cc_continuity.install import bootstrap  # noqa: E402

sys.exit(bootstrap.main(sys.argv[1:], HERE, cli))
