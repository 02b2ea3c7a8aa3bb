"""Issue 10: a secret typed into a prompt does not reach the successor, the machine handoff or git.

Through the protocol's steps in-process (the ladder, tests/helpers/ladder.py): prompts with
secrets in forms the old redactor missed, a rotation (valid handoff, and the degraded
machine-written one), the successor's bootstrap (``additionalContext``), the late prompts it
quotes, and the snapshot commit's message.
"""

import os

import pytest

from cc_continuity import config, session
from helpers.hookdriver import handoff_text, wait_for_snapshot_jobs

S1 = "a1a1a1a1-0000-4000-8000-000000000001"
S2 = "b2b2b2b2-0000-4000-8000-000000000002"
PW = "Xk9-fake-Pw!77"
TOKEN = "Zq7Lm2Np4Rs6Tv8Wx0Yb3Cd5Fg7Hj9Kk"
PROMPTS = ["deploy it: the db is alice:%s@db.internal:5432 and DB_PASS=%s" % (PW, PW),
           "also the API token is %s, use it for staging" % TOKEN]
FILES = {"README.md": "hello\n", "src/app.py": "x = 1\n"}
LATE = "oh and mysql -uroot -p%s works too" % PW


def bootstrap(out):
    return ((out or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""


def rotate(lad, *, valid):
    drv = lad.drv
    lad.work(sid=S1, prompts=PROMPTS)
    assert lad.request_handoff(S1).request["decision"] == "block"
    lad.prompt(S1, LATE)  # typed after the handoff was requested
    if valid:
        with open(drv.handoff_path(S1), "w") as f:
            f.write(handoff_text(config.HANDOFF_SECTIONS, extra={"Files touched": "- `README.md`"}))
        lad.stop(S1, stop_hook_active=True)
    else:
        for _ in range(config.DEFAULTS["handoff_max_tries"]):
            lad.stop(S1, stop_hook_active=True)
    assert drv.state(S1)["state"] == session.AWAITING_MANUAL_CLEAR
    text = bootstrap(lad.clear(S1, S2, tokens=None).cleared_out)
    assert text.startswith("Continuing from cp-001"), text
    return text


@pytest.mark.parametrize("valid", [True, False], ids=["model handoff", "machine handoff"])
def test_prompted_secrets_never_reach_the_successor(make_project, valid):
    lad = make_project(files=FILES)
    drv = lad.drv
    text = rotate(lad, valid=valid)
    assert PW not in text and TOKEN not in text
    assert "[REDACTED:" in text  # the prompts are still quoted, with the secret masked
    assert "db.internal" in text and "use it for staging" in text
    with open(drv.handoff_path(S1)) as f:
        handoff = f.read()
    assert PW not in handoff and TOKEN not in handoff
    if not valid:
        assert handoff.startswith("# Handoff (machine-written)") and "[REDACTED:" in handoff
    with open(os.path.join(drv.sdir(S1), "checkpoint", "snapshot.json")) as f:
        snap = f.read()
    assert PW not in snap and TOKEN not in snap
    # The prompts themselves stay in the session's own (0600) ledger, which never leaves.
    assert any(PW in r.get("text", "") for r in drv.ledger(S1, ev="prompt"))


def test_the_snapshot_commit_message_is_redacted(make_project):
    lad = make_project(files=FILES)
    drv = lad.drv
    lad.work(sid=S1, prompts=())
    lad.request_handoff(S1)
    # The commit message quotes the handoff's first lines; the handoff itself was checked, but a
    # secret the checker did not know (issue 10's forms) would have gone into git and out with a push.
    with open(drv.handoff_path(S1), "w") as f:
        f.write("# Handoff for DB_PASS=%s\n\n" % PW + handoff_text(config.HANDOFF_SECTIONS, title="",
                                                               extra={"Files touched": "- `README.md`"}))
    out = lad.stop(S1, stop_hook_active=True)
    assert out["decision"] == "block" and "secret" in out["reason"] and PW not in out["reason"]
    for _ in range(config.DEFAULTS["handoff_max_tries"] - 1):
        lad.stop(S1, stop_hook_active=True)
    wait_for_snapshot_jobs(drv.root)
    ref = drv.checkpoint_file("manifest.json", S1)["git"]["ref"]
    message = drv.git("log", "-1", "--format=%B", ref).decode()
    assert PW not in message
