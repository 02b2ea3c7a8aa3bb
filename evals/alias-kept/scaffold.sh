#!/bin/bash
set -e
# The run's own user-level cc-continuity config ($HOME is the run's temporary home): rotate at 40k tokens.
mkdir -p -m 700 "$HOME/.claude-continuity"
printf '{"rotate_tokens": 40000}\n' > "$HOME/.claude-continuity/config.json"
git config --global user.name eval && git config --global user.email eval@example.invalid
# ~60 KB of reading the task asks for: the context crosses 40k tokens mid-task.
filler() { i=0; while [ $i -lt 700 ]; do echo "- rule $i: keep each change small, named, and reviewed; prefer clarity over cleverness."; i=$((i+1)); done; }
mkdir -p app docs
{ echo "# Style"; filler; } > docs/STYLE.md
printf 'def fetch_user(uid):\n    return {"id": uid}\n' > app/users.py
printf 'from app.users import fetch_user\n\n\ndef get(uid):\n    return fetch_user(uid)\n' > app/api.py
printf 'from app.users import fetch_user\n\n\ndef main(uid):\n    print(fetch_user(uid))\n' > app/cli.py
git init -q -b main && git add -A && git commit -qm init
