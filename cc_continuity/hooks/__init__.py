"""One module per Claude Code hook event, routed by :mod:`.dispatch`."""
