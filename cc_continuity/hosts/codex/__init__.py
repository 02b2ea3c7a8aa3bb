"""Codex CLI 0.171 as a host: its rollout (the meter's reading) and its hooks' wire.

Pure code over bytes and dicts: nothing here installs, runs or types anything
(that is the host port's, step two of issue 28).  Facts: shared/reference/codex-cli-0.171.md.
"""
