#!/bin/sh
# cc-continuity's plugin: choose the Python every hook of the plugin runs and keep it as the link
# $CLAUDE_PLUGIN_DATA/python, which the hooks on a tool call (PreToolUse, PostToolUse, Stop) run
# as their command: exec follows a link in the kernel, so no shell and no version-manager shim
# runs there.  The arguments are the hook's own (-S -c <bootstrap> <Event>); the last names it.
#
# SessionStart (once a session) checks the kept link again: it is used while it still points at
# a Python this user may trust (it and its folder owned by the user or root, writable by nobody
# else); otherwise it is chosen again.  The other hooks that run through here (UserPromptSubmit,
# once a prompt; SessionEnd, PreCompact, StopFailure, Notification; the mod's hello) run a link
# that is there at once, as a tool call would, and choose only when there is none: a plugin
# installed in a live session has had no SessionStart, and its first prompt links the Python
# before any tool call.  With no Python 3.11 or newer the link points at `true` (every hook exits
# 0 at once), the reason is kept in $CLAUDE_PLUGIN_DATA/off (doctor repeats it) and this hook
# tells the user in one line.
data=${CLAUDE_PLUGIN_DATA:-}
case $data in /*) ;; *) exit 0 ;; esac  # not run by Claude Code as a plugin hook: nothing to keep
link=$data/python
for event; do :; done
if [ "$event" != SessionStart ] && [ -x "$link" ]; then
    exec "$link" "$@"  # what the tool-call hooks run with no check at all: SessionStart checks it
fi
uid=$(id -u)
umask 077  # what we write here (the off line) is the user's alone

trusted() {  # $1 and its folder: owned by this user or root, writable by no one else
    for f in "$1" "$(dirname -- "$1")"; do
        [ -n "$(find -L "$f" -prune \( -user "$uid" -o -user 0 \) ! -perm -0020 ! -perm -0002 -print 2>/dev/null)" ] \
            || return 1
    done
}

trusted "$data" || exit 0  # not ours to write in (Claude Code makes it 0755 under ~/.claude)
if [ -x "$link" ] && [ ! -e "$data/off" ] && trusted "$(readlink -- "$link")"; then
    exec "$link" "$@"
fi

found=
choose() {  # $1: a Python (a name on PATH or a path), then the hook's arguments: run the hook on it when it is
            # 3.11 or newer and trusted (linked first), else note in $found what it is.  Never run before it is
            # checked: the file found, its folder, and (through links) the real file and its folder.
    py=$(command -v -- "$1") || return 0
    shift
    real=$(readlink -f -- "$py" 2>/dev/null) || real=$py
    if ! trusted "$py" || ! trusted "$real"; then
        found="$found, $py (writable by others: not run)"
        untrusted=1
        return 0
    fi
    said=$("$py" -S -c 'import sys
print(getattr(sys, "_base_executable", sys.executable) if sys.version_info >= (3, 11) else "%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || return 0
    case $said in
        /*) if trusted "$said"; then
                # a name of this process's own: a SessionStart and the mod's hello may choose at once
                ln -sfn "$said" "$link.$$" && mv -f "$link.$$" "$link" && rm -f "$data/off"
                exec "$said" "$@"
            fi
            found="$found, $said (writable by others)" ;;
        ?*) found="$found, $py $said" ;;
    esac
}
ifs=$IFS
for name in ${CC_CONTINUITY_PYTHON:-} python3 python3.14 python3.13 python3.12 python3.11; do
    case $name in
        */*) [ -x "$name" ] && choose "$name" "$@" ;;
        *) IFS=:  # the first of that name on PATH, or past one refused as untrusted, the next
           for dir in $PATH; do
               IFS=$ifs
               [ -x "${dir:-.}/$name" ] && [ ! -d "${dir:-.}/$name" ] || continue
               untrusted=
               choose "${dir:-.}/$name" "$@"
               [ -n "$untrusted" ] || break
           done
           IFS=$ifs ;;
    esac
done
# Not on PATH, but installed where a version manager keeps its Pythons (pyenv, asdf, mise, uv): a 3.12 that
# pyenv installed but that is not this folder's version is still a real interpreter, run by its path.
share=${XDG_DATA_HOME:-${HOME:-/nonexistent}/.local/share}
for minor in 14 13 12 11; do
    for py in "${PYENV_ROOT:-${HOME:-/nonexistent}/.pyenv}"/versions/*/bin/python3.$minor \
              "${ASDF_DATA_DIR:-${HOME:-/nonexistent}/.asdf}"/installs/python/*/bin/python3.$minor \
              "$share"/mise/installs/python/*/bin/python3.$minor \
              "${UV_PYTHON_INSTALL_DIR:-$share/uv/python}"/cpython-*/bin/python3.$minor; do
        [ -x "$py" ] && choose "$py" "$@"
    done
done

found=$(printf '%s' "${found#, }" | tr -d '"\\' | tr '\n' ' ')
# The one command that fixes it: the version manager's own, where python3 is one of its shims or it is on PATH.
case $(command -v python3 2>/dev/null) in
    */.pyenv/*) manager=pyenv ;;
    */.asdf/*) manager=asdf ;;
    */mise/*) manager=mise ;;
    *) manager=
       for m in pyenv mise asdf uv; do
           command -v "$m" >/dev/null 2>&1 && manager=$m && break
       done ;;
esac
case $manager:$(uname -s) in
    pyenv:*) fix='pyenv install 3.12' ;;
    asdf:*) fix='asdf install python latest:3.12' ;;
    mise:*) fix='mise install python@3.12' ;;
    uv:*) fix='uv python install 3.12' ;;
    *:Darwin) fix='brew install python@3.12' ;;
    *) fix='sudo apt-get install python3.11 (or your package manager'"'"'s Python 3.11+)' ;;
esac
line="cc-continuity is off: its hooks need Python 3.11 or newer and found ${found:-no python3 on PATH}. Fix: $fix, then start a new session."
for t in /usr/bin/true /bin/true; do
    [ -x "$t" ] && ln -sfn "$t" "$link.$$" && mv -f "$link.$$" "$link" && break
done
printf '%s\n' "$line" >"$data/off"
printf '{"systemMessage": "%s"}\n' "$line"
exit 0
