"""The agents cc-continuity rotates, one folder per host (what its hooks send and read back)."""
