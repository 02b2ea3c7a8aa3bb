"""Size-bounded, line-oriented logs under ``$CC_CONTINUITY_HOME/logs``.

One line per hook invocation (event, session, duration) so a silently dying
hook shows up in ``doctor`` and in the log.  When a log passes its cap it is
moved to ``<name>.1`` (one generation), so the directory stays bounded.
Uses ``posix``, not ``os`` (every hook call writes here).
"""

import posix
import time

from . import paths

MAX_BYTES = 1024 * 1024


def stamp(t: float | None = None) -> str:
    t = time.time() if t is None else t
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)


def write(name: str, text: str, max_bytes: int = MAX_BYTES) -> None:
    """Append one line (newlines inside ``text`` are flattened).  Never raises."""
    try:
        d = paths.logs_dir()
        path = d + "/" + name
        line = ("%s %s\n" % (stamp(), text.replace("\n", " | "))).encode("utf-8", "replace")
        try:
            fd = posix.open(path, posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT | posix.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            paths.ensure_dir(d)
            fd = posix.open(path, posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT | posix.O_CLOEXEC, 0o600)
        try:
            if posix.fstat(fd).st_size + len(line) > max_bytes:
                try:
                    posix.replace(path, path + ".1")
                except OSError:
                    pass
                posix.close(fd)
                fd = posix.open(path, posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT | posix.O_CLOEXEC, 0o600)
            posix.write(fd, line)
        finally:
            posix.close(fd)
    except Exception:
        pass


_notes: list[str] = []  # what this process's hook call refused or skipped, for its one line (:func:`note`)


def note(text: str) -> None:
    """Something the hook call's one line in hooks.log should say besides its outcome (a transcript refused,
    say), from code that does not know the call; said once however often it happens."""
    if text not in _notes:
        _notes.append(text)


def hook(event: str, session_id: object, ms: float, outcome: str, detail: str = "") -> None:
    sid = (session_id or "-")[:8] if isinstance(session_id, str) else "-"
    outcome += "".join("; " + n for n in _notes)
    write("hooks.log", "%s sid=%s %.1fms %s%s" % (event, sid, ms, outcome, (" " + detail) if detail else ""))
