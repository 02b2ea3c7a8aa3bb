"""Issue 10: concurrent ``cc-continuity install`` runs are serialised; the app copy is never empty.

Eight real install processes start at once, round after round.  Each round first marks
the installed copy stale, so one of them really copies and swaps the app while the others
wait their turn.  A watcher resolves ``$CC_CONTINUITY_HOME/app`` the whole time: once it
exists it must always be a complete copy.  ``CC_CONTINUITY_RACE_ROUNDS`` runs more rounds.
"""

import json
import os
import subprocess
import sys
import threading
import time

from cc_continuity import paths
from cc_continuity.install import app

ROUNDS = int(os.environ.get("CC_CONTINUITY_RACE_ROUNDS", "5"))
INSTALLS = 8
MUST_EXIST = ("VERSION", "FINGERPRINT", "cc_continuity/hosts/claude/hooks/__init__.py",
              "cc_continuity/statusmain.py", "cc_continuity/redact/__init__.py", "lib/requests/__init__.py")


class Watcher(threading.Thread):
    """Checks the app copy as a hook would find it, as often as it can."""

    def __init__(self, home):
        super().__init__(daemon=True)
        self.link = app.app_link(home)
        self.stop = threading.Event()
        self.checks, self.problems = 0, []

    def run(self):
        seen = False
        while not self.stop.is_set():
            if not os.path.lexists(self.link):
                if seen:
                    self.problems.append("the app link vanished")
                time.sleep(0.001)
                continue
            seen = True
            root = os.path.realpath(self.link)
            missing = [rel for rel in MUST_EXIST if not os.path.isfile(os.path.join(root, rel))]
            if missing and os.path.realpath(self.link) == root:  # not swapped away meanwhile
                self.problems.append("%s lacks %s" % (root, missing))
            self.checks += 1


def _install_env():
    env = dict(os.environ, SHELL="/bin/bash", PATH="/usr/local/bin:/usr/bin:/bin")
    env.pop("CLAUDE_CONFIG_DIR", None)
    return env


def test_eight_concurrent_installs_round_after_round(tmp_path):
    home = paths.home()
    watcher = Watcher(home)
    watcher.start()
    failures, swaps = [], 0
    try:
        for r in range(ROUNDS):
            fp = os.path.join(app.app_link(home), "FINGERPRINT")
            if os.path.exists(fp):
                with open(fp, "w") as f:
                    f.write("stale\n")  # the next install must copy and swap again
            before = os.path.realpath(app.app_link(home))
            procs = [subprocess.Popen([sys.executable, "-m", "cc_continuity", "install"], env=_install_env(),
                                      cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                     for _ in range(INSTALLS)]
            for p in procs:
                out, err = p.communicate(timeout=600)
                if p.returncode != 0:
                    failures.append((r, p.returncode, err.decode()[-400:]))
            swaps += os.path.realpath(app.app_link(home)) != before
    finally:
        watcher.stop.set()
        watcher.join(10)
    assert failures == []
    assert watcher.problems == [] and watcher.checks > 100
    assert swaps == ROUNDS
    # What the rounds left is one working install: a hook runs from the app copy.
    with open(os.path.join(os.environ["HOME"], ".claude", "settings.json")) as f:
        doc = json.load(f)
    groups = doc["hooks"]["SessionStart"]
    assert len(groups) == 1, "eight installs, one group of ours per event"
    handler = groups[0]["hooks"][0]
    res = subprocess.run([handler["command"]] + handler["args"], input=b"{}", capture_output=True, timeout=60)
    assert res.returncode == 0
    with open(os.path.join(home, "logs", "hooks.log")) as f:
        assert "SessionStart" in f.read()
    assert len(os.listdir(app.versions_dir(home))) <= 2  # the linked copy and the one before it
