"""The ``claude()`` shell function that puts Claude Code inside tmux.

Rotation needs a tmux pane to type ``/clear`` into, so the wrapper hands every
``claude`` invocation to ``cc-continuity launch``, which decides (in Python,
where it can be tested) whether to start or attach a tmux session named
``<slug>-<NNN>`` or to run the real binary directly.

The one promise the shell side keeps on its own: ``claude`` must never break
because of cc-continuity.  When the launcher is gone or not executable, when
``CC_CONTINUITY=0``, or when the launcher exits with :data:`FALLTHROUGH_STATUS`
(it failed before it could exec anything), the function runs
``command claude`` with the user's arguments untouched.

This module only renders the block's body; the installer wraps it in its
markers and writes it to :func:`rc_path`.
"""

import os
import re
import sys

from . import blocks

# ``cc-continuity launch`` exits with this status when it failed *before* exec'ing
# claude or tmux; the wrapper then runs the real claude itself.  126 and 127 (the
# shell could not run the launcher, e.g. its interpreter was removed) fall through
# too.  Anything else is the exit status of claude (or of the tmux client) and is
# returned as is; a claude that itself exited 199 would be run a second time.
FALLTHROUGH_STATUS = 199
FALLTHROUGH_STATUSES = (FALLTHROUGH_STATUS, 126, 127)

# Exported by the block, so ``doctor`` can tell whether the shell it runs under
# has read the rc file since the block was installed.
ACTIVE_ENV = "CC_CONTINUITY_WRAPPER"

SHELLS = ("bash", "zsh", "fish")

# The installer's marked block (install/blocks.py) holding the body, in the rc
# file; ``doctor`` looks it up by this name.
BLOCK_NAME = "wrapper"
BLOCK_STYLE = "hash"


def detect_shell(env=None):
    """The user's login shell from ``$SHELL``: bash, zsh or fish.

    Anything else (or nothing) falls back to the platform's default shell.
    """
    env = os.environ if env is None else env
    name = os.path.basename(env.get("SHELL") or "").lstrip("-")
    if name in SHELLS:
        return name
    return "zsh" if sys.platform == "darwin" else "bash"


def rc_path(shell, home, env=None):
    """The file the block goes into for ``shell``.

    ``env`` (optional) is consulted for ``ZDOTDIR`` (zsh) and
    ``XDG_CONFIG_HOME`` (fish); without it the standard locations under
    ``home`` are used, so callers decide whether the live environment counts.
    """
    _check_shell(shell)
    env = env or {}
    if shell == "zsh":
        return os.path.join(env.get("ZDOTDIR") or home, ".zshrc")
    if shell == "fish":
        config = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        return os.path.join(config, "fish", "conf.d", "cc-continuity.fish")
    return os.path.join(home, ".bashrc")


# A bash *login* shell (macOS Terminal opens one per window; ``exec $SHELL -l``)
# reads the first of these that exists and never ~/.bashrc unless that file
# sources it.  When it does not, the wrapper goes into it too.
BASH_LOGIN_FILES = (".bash_profile", ".bash_login", ".profile")

_SOURCES_BASHRC = re.compile(r"""(^|[\s;&|(])(\.|source)\s+["']?(~|\$HOME|\$\{HOME\})/\.bashrc\b""")


def bash_login_file(home):
    """``(path, reads_bashrc)``: the startup file a bash login shell reads, and whether it loads ~/.bashrc.

    None exists: ``~/.bash_profile`` (created then; with no ``~/.profile``
    beside it nothing is shadowed).  A non-comment line that sources
    ``~/.bashrc`` (``. ~/.bashrc``, ``source "$HOME/.bashrc"``...) counts,
    outside our own block.
    """
    for name in BASH_LOGIN_FILES:
        path = os.path.join(home, name)
        try:
            with open(path, "rb") as f:
                text = blocks.decode(f.read())
        except FileNotFoundError:
            continue
        except OSError:
            return path, True  # unreadable: not ours to touch
        try:
            text = blocks.remove(text, BLOCK_NAME, BLOCK_STYLE, where=path)
        except blocks.BlockError:
            pass  # the installer refuses the file itself, with the reason
        reads = any(_SOURCES_BASHRC.search(line) for line in text.splitlines()
                    if not line.lstrip().startswith("#"))
        return path, reads
    return os.path.join(home, BASH_LOGIN_FILES[0]), False


def render(shell, launcher_path):
    """The body of the marked block for ``shell`` (no markers, ends with a newline)."""
    _check_shell(shell)
    if not os.path.isabs(launcher_path):
        raise ValueError("launcher path must be absolute: %r" % (launcher_path,))
    if "\n" in launcher_path or "\0" in launcher_path:
        raise ValueError("launcher path contains a newline or NUL: %r" % (launcher_path,))
    if shell == "fish":
        quoted, statuses = _fish_quote(launcher_path), " ".join(map(str, FALLTHROUGH_STATUSES))
    else:
        quoted, statuses = _sh_quote(launcher_path), "|".join(map(str, FALLTHROUGH_STATUSES))
    template = _FISH if shell == "fish" else _POSIX
    return template % {"launcher": quoted, "statuses": statuses, "active": ACTIVE_ENV}


def render_login(launcher_path):
    """The block for a bash login file (:func:`bash_login_file`) that does not read ~/.bashrc.

    That file may be ``~/.profile``, which ``sh`` reads too (dash, display
    managers): so the bash function is a here-document, read and eval'ed only
    under bash, and nothing in it is parsed by another shell.  No subprocess.
    """
    body = render("bash", launcher_path)
    return _LOGIN % {"body": body, "eof": _LOGIN_EOF}


def _check_shell(shell):
    if shell not in SHELLS:
        raise ValueError("unsupported shell %r (expected one of %s)" % (shell, ", ".join(SHELLS)))


def _sh_quote(s):
    """Single-quote for bash and zsh: the only special character inside is ``'``."""
    return "'" + s.replace("'", "'\\''") + "'"


def _fish_quote(s):
    """Single-quote for fish, where ``\\`` and ``'`` are escaped inside quotes."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


# ``function claude`` (not ``claude()``) so that a user's alias named claude cannot
# turn the definition into a syntax error that breaks the whole rc file.
_POSIX = """\
# Runs Claude Code inside a tmux session named <slug>-<NNN> so cc-continuity can
# rotate the context for you. Set CC_CONTINUITY=0 to bypass it for one command.
# If cc-continuity is missing or fails, the real claude runs as usual.
export %(active)s=1
function claude {
  if [ "${CC_CONTINUITY:-1}" != 0 ] && [ -x %(launcher)s ]; then
    %(launcher)s launch -- "$@"
    local __cc_continuity_rc=$?
    case $__cc_continuity_rc in
      %(statuses)s) ;;
      *) return "$__cc_continuity_rc" ;;
    esac
  fi
  command claude "$@"
}
"""

_FISH = """\
# Runs Claude Code inside a tmux session named <slug>-<NNN> so cc-continuity can
# rotate the context for you. Set CC_CONTINUITY=0 to bypass it for one command.
# If cc-continuity is missing or fails, the real claude runs as usual.
set -gx %(active)s 1
function claude --description 'Claude Code, in tmux for cc-continuity rotation'
    if test "$CC_CONTINUITY" != 0; and test -x %(launcher)s
        %(launcher)s launch -- $argv
        set -l __cc_continuity_rc $status
        if not contains -- $__cc_continuity_rc %(statuses)s
            return $__cc_continuity_rc
        end
    end
    command claude $argv
end
"""

_LOGIN_EOF = "__CC_CONTINUITY_WRAPPER__"

_LOGIN = """\
# A bash login shell reads this file and not ~/.bashrc: the same claude() wrapper
# for it (only under bash; other shells reading this file skip it).
if [ -n "${BASH_VERSION:-}" ]; then
  IFS= read -r -d '' __cc_continuity_def <<'%(eof)s' || :
%(body)s%(eof)s
  eval "$__cc_continuity_def"
  unset __cc_continuity_def
fi
"""
