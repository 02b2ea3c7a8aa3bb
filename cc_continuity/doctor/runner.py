"""Runs a list of doctor checks and renders the report: one row each (a check that crashes is a red row,
not a crash of doctor), a ``fix:`` line under each red one, the summary, a closing line.

Which checks run (the system's, and those of the agents judged), in what order, and what the closing
``Next:`` says are ``hosts/checkup.py``'s: it knows the hosts, this module does not.
"""

from .base import Context, Result

__all__ = ["Context", "Result", "render", "run"]


def run(ctx, checks):
    """Each of ``checks`` on ``ctx``, in order; one that crashes is reported red instead of stopping the rest."""
    out = []
    for check in checks:
        try:
            out.append(check(ctx))
        except Exception as e:
            name = check.__name__.replace("check_", "").replace("_", "-")
            out.append(Result(name, False, "the check itself failed: %s: %s" % (type(e).__name__, e),
                              "report this as a cc-continuity bug"))
    return out


_GREEN, _RED, _DIM, _RESET = "\033[32m", "\033[31m", "\033[2m", "\033[0m"
NAME_WIDTH = len("plugin-packages")  # the longest row name: the columns stay put whichever agents are judged


def render(results, color=False, next_line=None):
    """The human report: one line per check, a ``fix:`` line under each red one, the summary, ``next_line``."""
    def paint(code, text):
        return code + text + _RESET if color else text

    width = max([NAME_WIDTH] + [len(r.name) for r in results])
    lines = []
    for r in results:
        mark = "-   " if r.neutral else paint(_GREEN, "ok  ") if r.ok else paint(_RED, "FAIL")
        lines.append("%s  %-*s  %s" % (mark, width, r.name, r.detail))
        if not r.ok and r.fix:
            lines.append("%s  %-*s  fix: %s" % ("    ", width, "", r.fix))
    judged = [r for r in results if not r.neutral]
    bad = sum(not r.ok for r in judged)
    lines.append("")
    lines.append("%d of %d checks failed." % (bad, len(judged)) if bad else "All %d checks passed." % len(judged))
    if next_line:
        lines.append(paint(_DIM, next_line))
    return "\n".join(lines) + "\n"
