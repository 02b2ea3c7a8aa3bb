"""Codex CLI 0.171 as a host: its rollout (the meter's reading), its hooks' wire and entry, the host port.

appserver.py asks the binary itself (``codex app-server``: what it makes of a hooks.json), for
install and doctor; files.py reads and edits its files (hooks.json, config.toml's trust).
Facts: shared/reference/codex-cli-0.171.md.
"""
