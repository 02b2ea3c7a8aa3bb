#!/usr/bin/env bash
# Install the pinned Codex CLI into a cache dir for the end-to-end tests.
#
# Idempotent and offline once cached: when the cache already holds a codex that
# reports the pinned version nothing is fetched.  Progress goes to stderr; the
# last line on stdout is the absolute path of the native codex executable, so CI can do
#   export CC_CONTINUITY_CODEX_BIN="$(.ci/install-codex.sh | tail -n 1)"
#
# The npm package @openai/codex is a node launcher (bin/codex.js) plus an
# optional dependency per platform holding a static binary; the tests run that
# binary directly (no node at test time, and the launcher's env additions are
# not part of what we test).
#
# Env: CC_CODEX_VERSION (default 0.171.0), CC_CODEX_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/cc-continuity/codex-<version>: no root needed).
set -euo pipefail

version="${CC_CODEX_VERSION:-0.171.0}"
cache="${CC_CODEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cc-continuity/codex-$version}"
package="@openai/codex"

say() { printf 'install-codex: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) platform=linux-x64; triple=x86_64-unknown-linux-musl ;;
    Linux-aarch64) platform=linux-arm64; triple=aarch64-unknown-linux-musl ;;
    Darwin-x86_64) platform=darwin-x64; triple=x86_64-apple-darwin ;;
    Darwin-arm64) platform=darwin-arm64; triple=aarch64-apple-darwin ;;
    *) die "no Codex CLI build for $(uname -s) $(uname -m)" ;;
esac

# `codex --version` prints "codex-cli 0.171.0"; HOME/CODEX_HOME point at a
# scratch dir so the probe writes nothing of the user's.
installed_version() {
    local bin="$1" scratch
    [ -x "$bin" ] || return 1
    scratch="$(mktemp -d)"
    HOME="$scratch" CODEX_HOME="$scratch" "$bin" --version </dev/null 2>/dev/null | awk 'NR==1{print $2}'
    rm -rf "$scratch"
}

mkdir -p "$cache"
cache="$(cd "$cache" && pwd -P)"

# Two CI jobs sharing a cache must not install over each other.
if [ -w "$cache" ] && command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.install.lock"
    flock 9
fi

find_bin() {  # the layout inside the platform package has moved between releases
    local root="$cache/node_modules/@openai/codex-$platform/vendor/$triple" b
    for b in "$root/bin/codex" "$root/codex/codex"; do
        [ -f "$b" ] && [ -x "$b" ] && { printf '%s\n' "$b"; return 0; }
    done
    return 1
}

if b="$(find_bin)" && [ "$(installed_version "$b" || true)" = "$version" ]; then
    bin="$b"
    say "codex $version already in $cache"
else
    command -v npm >/dev/null 2>&1 || die "npm is required to install $package@$version"
    say "installing $package@$version ($platform) into $cache"
    [ -f "$cache/package.json" ] || printf '{"private": true}\n' >"$cache/package.json"
    npm install --prefix "$cache" --save-exact --no-audit --no-fund --prefer-offline \
        "$package@$version" >&2
    b="$(find_bin)" || die "no codex binary under $cache/node_modules/@openai/codex-$platform"
    bin="$b"
    got="$(installed_version "$bin" || true)"
    [ "$got" = "$version" ] || die "$bin reports version '${got:-none}', expected $version"
fi

printf '%s\n' "$bin"
