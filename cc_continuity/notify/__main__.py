"""``python -m cc_continuity.notify``: the detached flusher :func:`cc_continuity.notify.emit` starts."""

import sys

from . import main

sys.exit(main())
