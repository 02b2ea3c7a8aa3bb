#!/bin/bash
set -e
# The run's own user-level cc-continuity config ($HOME is the run's temporary home): rotate at 40k tokens.
mkdir -p -m 700 "$HOME/.claude-continuity"
printf '{"rotate_tokens": 40000}\n' > "$HOME/.claude-continuity/config.json"
git config --global user.name eval && git config --global user.email eval@example.invalid
# ~60 KB of reading the task asks for: the context crosses 40k tokens mid-task.
filler() { i=0; while [ $i -lt 700 ]; do echo "- rule $i: keep each change small, named, and reviewed; prefer clarity over cleverness."; i=$((i+1)); done; }
mkdir -p src
n=0
for spec in a:3 b:7 c:2 d:5 e:1 f:4; do
  name=${spec%%:*}; todos=${spec##*:}
  { i=0; while [ $i -lt 600 ]; do echo "value_$i = $i  # plain line"; i=$((i+1)); done
    t=0; while [ $t -lt $todos ]; do echo "# TODO($name) item $t"; t=$((t+1)); done; } > src/$name.py
done
git init -q -b main && git add -A && git commit -qm init
