"""The optional watchdog daemon: model server probe, session liveness, bounded actions.

Layout (each module is small and testable alone):

* :mod:`.probe` -- HTTP probes of the model server and the UP/DEGRADED/DOWN machine;
* :mod:`.liveness` -- what each registered session is doing, seen from outside;
* :mod:`.actions` -- the planner (``Brain.cycle``) and the executor of its actions;
* :mod:`.daemon` -- the loop, the pid lock, SIGTERM;
* :mod:`.service` -- the launchd agent and the systemd user unit.

Its own files live in ``$CC_CONTINUITY_HOME/watchdog/``: ``ledger.jsonl``
(every probe result and action, hash-chained), ``state.json`` (what ``watchdog
status`` shows, and the action counters that must survive a restart) and
``daemon.pid`` (the flock that keeps one instance at a time).
"""

import time
from dataclasses import dataclass, fields

from .. import config, paths


def ago(ts: "float | None", now: "float | None" = None) -> str:
    """An age in words, the same in every view (``status``, ``history``, the fleet, the watchdog):
    ``12s ago``, ``5m ago``, ``3h07m ago``, ``2d ago``; ``-`` when there is no time."""
    if not ts:
        return "-"
    s = max(0, int((now or time.time()) - ts))
    if s < 60:
        return "%ds ago" % s
    if s < 3600:
        return "%dm ago" % (s // 60)
    if s < 86400:
        return "%dh%02dm ago" % (s // 3600, (s % 3600) // 60)
    return "%dd ago" % (s // 86400)


def state_dir():
    return paths.home() + "/watchdog"


def ledger_path():
    return state_dir() + "/ledger.jsonl"


def state_path():
    return state_dir() + "/state.json"


def pid_path():
    return state_dir() + "/daemon.pid"


LOG = "watchdog.log"

# Config key -> Settings field.  Keys the config schema does not know (yet) are
# read with ``cfg.get`` so they simply keep their defaults until it does.
_KEYS = {
    "health_url": "watchdog_health_url",
    "progress_url": "watchdog_progress_url",
    "progress_metric": "watchdog_progress_metric",
    "progress_model": "watchdog_progress_model",
    "probe_timeout": "watchdog_probe_timeout_s",
    "fail_threshold": "watchdog_fail_threshold",
    "interval": "watchdog_interval_s",
    "grace": "watchdog_grace_s",
    "stall": "watchdog_stall_s",
    "exit_hang": "watchdog_exit_hang_s",
    "max_actions": "watchdog_max_actions",
    "backoff": "watchdog_backoff_s",
    "digest_file": "watchdog_digest_file",
    "digest_command": "watchdog_digest_command",
    "power_cycle_command": "watchdog_power_cycle_command",
    "power_cycle_after": "watchdog_power_cycle_after_s",
    "power_cycle_cooldown": "watchdog_power_cycle_cooldown_s",
    "power_cycle_daily_cap": "watchdog_power_cycle_daily_cap",
    "rotation_stuck": "watchdog_rotation_stuck_s",
    "quiet": "watchdog_quiet_s",
}


@dataclass
class Settings:
    """Every knob the watchdog reads, in seconds (floats allowed: 0.05 is 50 ms).

    ``grace`` does two jobs, both "how long before we believe it": how long a
    busy server's progress counter may stand still before the probe fails, and
    how long the server must be back UP before a stalled turn is nudged.
    ``exit_hang`` is both the wait after SessionEnd before SIGTERM and the wait
    after SIGTERM before SIGKILL.  ``rotation_stuck``: a session in ROTATING or
    AWAITING_MANUAL_CLEAR this long is stalled (pushed; the rotation retried once
    where safe).  ``quiet``: no key from an attached client for this long before
    the watchdog types into a pane.
    """

    health_url: str = None
    progress_url: str = None
    progress_metric: str = "vllm:iteration_tokens_total"
    progress_model: str = None
    probe_timeout: float = 10.0
    fail_threshold: int = 3
    interval: float = 15.0
    grace: float = 120.0
    stall: float = 600.0
    exit_hang: float = 30.0
    max_actions: int = 3
    backoff: float = 300.0
    digest_file: str = None
    digest_command: str = None
    power_cycle_command: str = None
    power_cycle_after: float = 900.0
    power_cycle_cooldown: float = 3600.0
    power_cycle_daily_cap: int = 3
    rotation_stuck: float = 900.0
    quiet: float = 1.0

    @classmethod
    def from_config(cls, cfg, **overrides):
        values = {}
        for f in fields(cls):
            v = cfg.get(_KEYS[f.name], f.default)
            values[f.name] = f.default if v is None and f.default is not None else v
        values.update(overrides)
        return cls(**values)

    @classmethod
    def load(cls, **overrides):
        """From the global config (``config.json``); raises ``config.ConfigError``."""
        return cls.from_config(config.load(None), **overrides)

    @property
    def probing(self):
        return bool(self.health_url or self.progress_url)
