"""``cc-continuity repeat <code>``: let one held repeat through, where no prompt hook runs (an MCP client with no
hooks of ours: its agent's ``effect_begin`` was refused with this code).

The user's word only: it asks for the code to be typed again on a terminal, and refuses when stdin is not one
(an agent's shell tool has none), so an agent cannot lift its own hold.  Recorded as an override in the
project's side-effect records, exactly as ``repeat <code>`` typed in a prompt is: it lets one repeat through.
"""

import sys

from ..holds import effects
from ._util import current_project


def register(sub):
    p = sub.add_parser("repeat", description="Let one repeat of a held side effect through (the code its refusal "
                                             "named). Asks you to type the code again on a terminal.")
    p.add_argument("code", help="the code of the hold (8 hex digits), as in 'repeat 1a2b3c4d'")
    p.set_defaults(func=run)


def run(args):
    code = args.code.strip().lower()
    if len(code) != effects.CODE_LEN or any(c not in "0123456789abcdef" for c in code):
        sys.stderr.write("cc-continuity repeat: %r is not a hold's code (%d hex digits)\n" % (args.code, effects.CODE_LEN))
        return 2
    proj = current_project()
    held = [r for r in effects.read(proj.dir) if r.get("ph") == "intent" and str(r.get("k", "")).startswith(code)]
    if not held:
        sys.stderr.write("cc-continuity repeat: no side effect of %s has the code %s\n" % (proj.slug, code))
        return 2
    if not sys.stdin.isatty():
        sys.stderr.write("cc-continuity repeat: only you can lift a hold, on a terminal: run it yourself (its input "
                         "is not a terminal here, as an agent's shell is not)\n")
        return 2
    what = held[-1].get("what") or "a side effect"
    sys.stdout.write("This lets one repeat of: %s\nthrough. Type the code again to confirm: " % what)
    sys.stdout.flush()
    if sys.stdin.readline().strip().lower() != code:
        sys.stderr.write("cc-continuity repeat: not confirmed; nothing changed\n")
        return 1
    effects.append(proj.dir, {"ph": "override", "code": code, "sid": None, "n": "cli", "by": "user"})
    print("one repeat of %s is let through (code %s)" % (what, code))
    return 0
