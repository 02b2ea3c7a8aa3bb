"""Codex CLI 0.171 as a host: its rollout (the meter's reading), its hooks' wire and entry, the host port.

appserver.py asks the binary itself (``codex app-server``: what it makes of a hooks.json), for
install and doctor; nothing here installs anything (install/codex.py does).
Facts: shared/reference/codex-cli-0.171.md.
"""
