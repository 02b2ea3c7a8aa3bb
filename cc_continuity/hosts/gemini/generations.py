"""A Gemini CLI session's generations: what keys it across the clears it does not announce.

A clear our AfterAgent asks for keeps Gemini's session id and fires no SessionEnd/SessionStart, yet the
successor is a session of its own to us (its record, its card, its ``ids/`` link).  So the host counts
the clears it asked for: ``runtime/gemini/<session id>.gen`` holds the generation (none: the first), and
the key of generation N > 1 is ``<session id>_gN``.  The count is raised when the clearing answer is
written (:func:`next_generation`), before Gemini acts on it.  A typed /clear is a new session id.
Every Gemini hook call reads it (a tool call's fast path too): ``posix``-level reads, no other import.
"""

from ... import atomic, fastjson, paths, safefile


def folder() -> str:
    """Where the host keeps what it counts and remembers per session (``runtime/gemini``)."""
    return paths.runtime_dir() + "/gemini"


def private_folder() -> str:
    """:func:`folder`, made and checked private (0700, ours) at this use."""
    safefile.private_dir(paths.runtime_dir())
    return safefile.private_dir(folder())


def _generation_path(sid: str) -> str:
    return folder() + "/" + sid + ".gen"


def generation(sid: str) -> int:
    """The generation of Gemini session ``sid`` (1 until a clear of ours)."""
    try:
        with open(_generation_path(sid), "rb") as f:
            n = fastjson.loads(f.read(64))
    except (OSError, ValueError):
        return 1
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1


def key(sid: str, gen: int | None = None) -> str:
    """Our session key for generation ``gen`` (the current one by default) of Gemini session ``sid``."""
    gen = generation(sid) if gen is None else gen
    return sid if gen <= 1 else "%s_g%d" % (sid, gen)


def next_generation(sid: str) -> int:
    """A clear of ours is being answered: the generation after this one (written, private), returned."""
    gen = generation(sid) + 1
    private_folder()
    atomic.write_text(_generation_path(sid), str(gen), fsync=False, follow=False)
    return gen
