"""CLI verbs, one module each (see :mod:`cc_continuity.cli`)."""
