"""Record the Codex TUI screens in this folder from the real binary (offline, a throwaway sandbox).

    python3 tests/data/codex/screens/record.py     # CC_CONTINUITY_CODEX_BIN or the .ci/install-codex.sh cache

Each state of ``helpers.codex.SCREENS`` (the tour: trust, hooks review, idle, drafts, busy, a hook
running, the slash popup, after /clear; inline and on the alternate screen) is written as
``<name>.ansi``: the rows ``tmux capture-pane -p -e`` gave, as the rotator captures them.  The
sandbox's temp root is replaced by ``/SANDBOX`` and the clock in "Worked for 1s • 17:02" is kept.
"""

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # tests/ (helpers)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE)))))  # the checkout

from helpers.codex import SCREENS, TOUR_SCENARIO, CodexSandbox, find_codex_bin, tour  # noqa: E402
from helpers.responses_model import ResponsesModel  # noqa: E402


def main():
    bin_ = find_codex_bin()
    if bin_ is None:
        sys.exit("no codex: run .ci/install-codex.sh first")
    with tempfile.TemporaryDirectory(prefix="cx-", dir="/tmp") as root, ResponsesModel(TOUR_SCENARIO) as model:
        box = CodexSandbox(bin_, model, root)
        real = os.path.realpath(root)
        seen = []
        for name, screen in tour(box):
            rows = [r.replace(real, "/SANDBOX").replace(root, "/SANDBOX") for r in screen.styled]
            with open(os.path.join(HERE, name + ".ansi"), "w", encoding="utf-8") as f:
                f.write("\n".join(rows))
            seen.append(name)
    assert seen == list(SCREENS), seen
    print("recorded %d screens" % len(seen))


if __name__ == "__main__":
    main()
