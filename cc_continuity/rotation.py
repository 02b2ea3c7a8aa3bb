"""From a verified checkpoint to the successor: tmux rotator, or a manual /clear.

In tmux the rotator (a detached process) types ``/clear`` and the
continuation; without tmux the user is told to type ``/clear`` and the
successor's SessionStart claims the checkpoint all the same.
"""

import json

from . import atomic, checkpoint, session


def continuation_prompt(cid, successor_name):
    return ("Continuing from %s (%s). The handoff and machine facts are in this session's context; "
            "carry on with its next steps." % (cid, successor_name))


def started_marker(sdir):
    return checkpoint.cp_dir(sdir) + "/successor.started"


def delivered_marker(sdir):
    return checkpoint.cp_dir(sdir) + "/continuation.delivered"


def draft_file(sdir):
    """Text the user had left in the input box when the rotator cleared it (the bootstrap quotes it)."""
    return checkpoint.cp_dir(sdir) + "/draft.txt"


def plan(rec, sdir, cfg, successor_name, project_lock=None):
    cid = (rec.get("checkpoint") or {}).get("id") or checkpoint.checkpoint_id(rec["number"])
    out = {
        "socket": rec["tmux_socket"],
        "pane": rec["tmux_pane"],
        "started_marker": started_marker(sdir),
        "delivered_marker": delivered_marker(sdir),
        "continuation": continuation_prompt(cid, successor_name),
        "ledger": session.ledger_path(sdir),
        "successor_name": successor_name,
        "sdir": sdir,
        "draft_file": draft_file(sdir),
        "timeouts": {"idle_s": cfg["rotator_idle_timeout_s"], "marker_s": cfg["rotator_marker_timeout_s"],
                     "delivery_s": cfg["rotator_delivery_timeout_s"], "draft_s": cfg["rotator_draft_wait_s"]},
        "retries": cfg["rotator_retries"],
    }
    if project_lock:
        out["project_lock"] = project_lock
    if isinstance(rec.get("pid"), int) and not isinstance(rec.get("pid"), bool) and rec["pid"] > 0:
        out["claude_pid"] = rec["pid"]
    return out


def can_use_tmux(rec, cfg):
    if not cfg["tmux"] or not rec.get("tmux_pane") or not rec.get("tmux_socket"):
        return False
    from .tmux import Pane

    return Pane.from_env({"TMUX": "%s,0,0" % rec["tmux_socket"], "TMUX_PANE": rec["tmux_pane"]}) is not None


def start(rec, sdir, cfg, successor_name, project_lock=None):
    """Spawn the rotator for a verified checkpoint; returns its pid."""
    from . import rotator

    p = plan(rec, sdir, cfg, successor_name, project_lock)
    path = checkpoint.cp_dir(sdir) + "/rotator-plan.json"
    atomic.write_text(path, json.dumps(p, indent=2) + "\n")
    from . import paths

    paths.ensure_dir(paths.logs_dir())
    return rotator.spawn(path, log_path=paths.logs_dir() + "/rotator.log")
