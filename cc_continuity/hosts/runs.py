"""``cc-continuity run`` across the hosts: which host's back-end drives the sessions, on rotation/run.py's loop.

Above the hosts, like ``setup.py`` and ``checkup.py``: each host folder named in
:data:`~cc_continuity.hosts.HOSTS` that can run headless has ``headless.py`` with its ``BACKEND`` (a
:class:`~cc_continuity.rotation.run.Backend`: the command line of one session, where its executable is) and
``NO_BINARY`` (what to say when there is none).  A host without one is not offered.  ``commands/run.py`` calls here.
"""

import importlib
import importlib.util

from . import HOSTS

PIECES = {name: importlib.import_module(".%s.headless" % name, __package__) for name in HOSTS
          if importlib.util.find_spec(".%s.headless" % name, __package__) is not None}
AGENTS = tuple(PIECES)  # run's --agent values
