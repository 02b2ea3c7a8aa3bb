#!/usr/bin/env bash
# Install the pinned Gemini CLI into a cache dir for the end-to-end tests.
#
# Idempotent and offline once cached: when the cache already holds a gemini that
# reports the pinned version nothing is fetched.  Progress goes to stderr; the
# last line on stdout is the absolute path of the gemini executable, so CI can do
#   export CC_CONTINUITY_GEMINI_BIN="$(.ci/install-gemini.sh | tail -n 1)"
#
# The npm package @google/gemini-cli is JavaScript (bundle/gemini.js, a node
# launcher that relaunches itself as a child node): it needs Node.js >= 20 at
# install time and at test time, which is checked first.
#
# Env: CC_GEMINI_VERSION (default 0.61.0), CC_GEMINI_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/cc-continuity/gemini-<version>: no root needed).
set -euo pipefail

version="${CC_GEMINI_VERSION:-0.61.0}"
cache="${CC_GEMINI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cc-continuity/gemini-$version}"
package="@google/gemini-cli"
node_fix="install Node.js 20 or newer (https://nodejs.org, or \`nvm install 20\`) and put it first on PATH"

say() { printf 'install-gemini: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v node >/dev/null 2>&1 || die "Node.js is required to run Gemini CLI and was not found; $node_fix"
node_version="$(node --version 2>/dev/null || true)"   # v20.20.2
node_major="${node_version#v}"
node_major="${node_major%%.*}"
case "$node_major" in
    '' | *[!0-9]*) die "cannot read the Node.js version ('${node_version:-nothing}' from $(command -v node)); $node_fix" ;;
esac
[ "$node_major" -ge 20 ] || die "Gemini CLI needs Node.js >= 20, $(command -v node) is $node_version; $node_fix"

# `gemini --version` prints "0.61.0"; HOME and the XDG dirs point at a scratch dir so
# the probe writes nothing of the user's (it creates ~/.gemini on its first run).
installed_version() {
    local bin="$1" scratch got
    [ -x "$bin" ] || return 1
    scratch="$(mktemp -d)"
    got="$(HOME="$scratch" XDG_CONFIG_HOME="$scratch/.config" XDG_CACHE_HOME="$scratch/.cache" \
        XDG_DATA_HOME="$scratch/.local/share" XDG_STATE_HOME="$scratch/.local/state" \
        "$bin" --version </dev/null 2>/dev/null | awk 'NF{v=$NF} END{print v}')" || true
    rm -rf "$scratch"
    printf '%s\n' "$got"
}

mkdir -p "$cache"
cache="$(cd "$cache" && pwd -P)"

# Two CI jobs sharing a cache must not install over each other.
if [ -w "$cache" ] && command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.install.lock"
    flock 9
fi

bin="$cache/node_modules/.bin/gemini"   # npm's link to node_modules/@google/gemini-cli/bundle/gemini.js

if [ -x "$bin" ] && [ "$(installed_version "$bin" || true)" = "$version" ]; then
    say "gemini $version already in $cache"
else
    command -v npm >/dev/null 2>&1 || die "npm is required to install $package@$version (it comes with Node.js)"
    say "installing $package@$version into $cache"
    [ -f "$cache/package.json" ] || printf '{"private": true}\n' >"$cache/package.json"
    npm install --prefix "$cache" --save-exact --no-audit --no-fund --prefer-offline \
        "$package@$version" >&2
    [ -x "$bin" ] || die "no gemini executable at $bin after npm install"
    got="$(installed_version "$bin" || true)"
    [ "$got" = "$version" ] || die "$bin reports version '${got:-none}', expected $version"
fi

printf '%s\n' "$bin"
