#!/usr/bin/env bash
# Install the pinned Claude Code CLI into a cache dir for the end-to-end tests.
#
# Idempotent: when the cache already holds a working claude at the pinned
# version nothing is downloaded.  Progress goes to stderr; the last line on
# stdout is the absolute path of the claude executable, so CI can do
#   export CC_CONTINUITY_CLAUDE_BIN="$(.ci/install-claude.sh | tail -n 1)"
#
# Env: CC_CLAUDE_VERSION (default 2.1.328), CC_CLAUDE_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/cc-continuity/claude-<version>: no root needed).
set -euo pipefail

version="${CC_CLAUDE_VERSION:-2.1.328}"
cache="${CC_CLAUDE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cc-continuity/claude-$version}"
package="@anthropic-ai/claude-code"

say() { printf 'install-claude: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# The npm package ships a placeholder bin/claude.exe that its postinstall
# replaces with the platform's native binary; a working one reports the version.
installed_version() {
    local bin="$1"
    [ -x "$bin" ] || return 1
    HOME="${TMPDIR:-/tmp}" DISABLE_AUTOUPDATER=1 "$bin" --version </dev/null 2>/dev/null | awk 'NR==1{print $1}'
}

mkdir -p "$cache"
cache="$(cd "$cache" && pwd -P)"
bin="$cache/node_modules/.bin/claude"

# Two CI jobs sharing a cache must not install over each other.
if [ -w "$cache" ] && command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.install.lock"
    flock 9
fi

if [ "$(installed_version "$bin" || true)" = "$version" ]; then
    say "claude $version already in $cache"
else
    command -v npm >/dev/null 2>&1 || die "npm is required to install $package@$version"
    say "installing $package@$version into $cache"
    [ -f "$cache/package.json" ] || printf '{"private": true}\n' >"$cache/package.json"
    npm install --prefix "$cache" --save-exact --no-audit --no-fund --prefer-offline \
        "$package@$version" >&2
    if [ "$(installed_version "$bin" || true)" != "$version" ]; then
        # Scripts may be disabled (npm ignore-scripts): place the native binary ourselves.
        say "native binary not in place; running the package's postinstall"
        (cd "$cache/node_modules/$package" && node install.cjs) >&2
    fi
    got="$(installed_version "$bin" || true)"
    [ "$got" = "$version" ] || die "$bin reports version '${got:-none}', expected $version"
fi

printf '%s\n' "$bin"
