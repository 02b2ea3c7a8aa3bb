"""Layered, validated configuration, and who may set what.

Precedence, lowest first: built-in defaults < ``$CC_CONTINUITY_HOME/config.json``
< ``<project root>/.claude/continuity.json`` < the user's own per-project file
``$CC_CONTINUITY_HOME/projects/<key>/config.json`` (``configure --project``)
< environment.  A wrong type or value is a :class:`ConfigError` naming the
file and the key; an unknown key is only a warning (so a newer config file
does not break an older install).

The repository file is written by whoever wrote the repository, not by the
user, so it may only *narrow* (see :data:`REPO_ANY` and :data:`REPO_NARROW`):
a key that could run something, contact something or loosen a safety check
is ignored there with a warning naming the file and the key.  The rule lives
here, in the one place every reader goes through, not at each use.
Standard library only (read on every hook).
"""

import os

from . import atomic, fastjson, paths, safefile
from .errors import ConfigError as ConfigError  # (config.ConfigError: where its callers look for it)

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported (read on every hook)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    Check = Callable[[object], str | None]  # a validator: None when the value is fine, else the problem

HANDOFF_SECTIONS = [
    "Goal",
    "Done so far",
    "Current state",
    "Next steps",
    "Decisions and constraints",
    "Open questions",
    "Files touched",
    "How to verify",
]


def _int(lo: int | None = None, hi: int | None = None, null: bool = False) -> "Check":
    def check(v: object) -> str | None:
        if v is None and null:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            return "must be an integer" + (" or null" if null else "")
        if lo is not None and v < lo:
            return "must be >= %d" % lo
        if hi is not None and v > hi:
            return "must be <= %d" % hi
        return None
    return check


def _num(lo: float, hi: float, null: bool = False) -> "Check":
    def check(v: object) -> str | None:
        if v is None and null:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return "must be a number"
        if not (lo < v <= hi):
            return "must be > %g and <= %g" % (lo, hi)
        return None
    return check


def _num_from_zero(hi: float) -> "Check":
    def check(v: object) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return "must be a number"
        if not (0 <= v <= hi):
            return "must be >= 0 and <= %g" % hi
        return None
    return check


def _bool(v: object) -> str | None:
    return None if isinstance(v, bool) else "must be true or false"


def _url(v: object) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str) or not (v.startswith("http://") or v.startswith("https://")):
        return "must be an http(s) URL or null"
    return None


def _str_or_null(v: object) -> str | None:
    return None if v is None or isinstance(v, str) else "must be a string or null"


def _str_list(v: object) -> str | None:
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        return "must be a list of non-empty strings"
    return None


def _nonempty_str_list(v: object) -> str | None:
    return _str_list(v) or (None if v else "must not be empty")


# key: (default, validator, one-line meaning)
SCHEMA: "dict[str, tuple[Any, Check, str]]" = {
    "enabled": (True, _bool, "rotation on/off (per project: .claude/continuity.json)"),
    "window": (None, _int(1000, 100_000_000, null=True), "context window in tokens; null = detect"),
    "window_source": (None, _str_or_null, "where window came from (`configure --window auto`: the model server's "
                                          "answer and its date); null = set by hand or detected"),
    "warn": (55, _num(0, 100), "percent of the window: note to wrap up soon"),
    "rotate": (62, _num(0, 100), "percent: hand off and rotate at the next turn end"),
    "hard": (72, _num(0, 100), "percent: deny tools except writing the handoff"),
    "rotate_tokens": (None, _int(1000, null=True), "absolute token cap that triggers rotate on big windows"),
    "unattended": (False, _bool, "start claude with --dangerously-skip-permissions for the whole chain"),
    "tmux": (True, _bool, "type /clear through tmux; false = ask the user to type it"),
    "ntfy_url": (None, _url, "ntfy topic URL for phone pushes; null = off"),
    "ntfy_token": (None, _str_or_null, "bearer token for the ntfy server"),
    "notify_events": (["all"], _str_list, "which events push (names, or all)"),
    "handoff_sections": (list(HANDOFF_SECTIONS), _nonempty_str_list, "required handoff sections"),
    "handoff_min_chars": (400, _int(0), "smallest acceptable handoff"),
    "handoff_max_chars": (24000, _int(100), "largest acceptable handoff"),
    "handoff_max_tries": (3, _int(1, 6), "model attempts before a machine handoff"),
    "handoff_require_sources": (False, _bool, "reject a handoff whose Current state / How to verify claims cite "
                                              "nothing re-checkable (a file:line or :symbol, a commit, a command "
                                              "with its exit code)"),
    "snapshot_max_file_bytes": (10 * 1024 * 1024, _int(0), "changed tracked files above this keep their staged version in snapshots"),
    "snapshot_max_untracked_bytes": (1024 * 1024, _int(0), "untracked files above this (or the cap above) are left out of snapshots"),
    "snapshot_untracked": (True, _bool, "include untracked (not ignored) files in work-tree snapshots"),
    "snapshot_hook_wait_s": (5, _int(0, 40), "how long the Stop hook waits for the snapshot before leaving it to its background job"),
    "snapshot_timeout_s": (600, _int(10, 86400), "the longest a snapshot may take"),
    "snapshot_keep": (30, _int(1, null=True), "snapshots kept per project beyond the protected ones (null = no count limit)"),
    "snapshot_max_age_days": (30, _num(0, 36500, null=True), "snapshots older than this are pruned (protected ones never; null = no age limit)"),
    "share_remote": (None, _str_or_null, "git remote (a name in the repository's remotes) every verified checkpoint "
                                         "is published to under refs/continuity/shared/; null = never"),
    "share_untracked": (False, _bool, "with share_remote: publish untracked files of the snapshot too"),
    "mcp_clients": ([], _str_list, "MCP clients (by the name they declare) allowed the mutating tools of "
                                   "`cc-continuity mcp`; read-only tools are open to every client"),
    "mcp_server": (False, _bool, "a plugin installed from a marketplace builds the MCP server's SDK (about 45 MB, "
                                 "from your package index) in its data folder, so its `cc-continuity` server starts; "
                                 "false = the plugin's server stays off (install --mcp is the settings form's)"),
    "share_unclaimed_alert_min": (30, _num(0, 525600), "the watchdog pushes once when a checkpoint published from "
                                                       "here waits unclaimed this long (minutes; 0 = never)"),
    "bootstrap_max_tokens": (2500, _int(200, 2400000), "budget for the successor's injected text (chars/4)"),
    "resume_stale_after_h": (72, _num(0, 87600, null=True), "a checkpoint older than this is resumed as stale "
                                                           "(null = age alone never makes it stale)"),
    "turn_snapshots": (True, _bool, "snapshot the work tree at every turn end (rolling, one ref per session) so a "
                                    "crash before any checkpoint loses at most the last turn's tree"),
    "precompact_block": (True, _bool, "block an auto-compaction at rotate and hand off instead"),
    "rotator_idle_timeout_s": (120, _int(1, 3600), "how long the rotator waits for Claude Code to go idle"),
    "rotator_marker_timeout_s": (60, _int(1, 600), "how long it waits for the successor to start"),
    "rotator_delivery_timeout_s": (20, _int(1, 600), "how long it waits for the continuation to arrive"),
    "rotator_retries": (3, _int(0, 10), "bounded retries per rotator step"),
    "rotator_draft_wait_s": (60, _int(1, 3600), "how long text left unsent in the input box holds a rotation"),
    "mod": (True, _bool, "hand over in-process through the plugin's mod when it is loaded (else tmux)"),
    "compact_to_rotation": (True, _bool, "with the mod loaded: rotate instead of letting Claude Code auto-compact"),
    "mod_standby_s": (15, _int(1, 600), "how long the tmux rotator stands by for the mod's hand-over before typing"),
    "fetch_packages": (True, _bool, "a plugin installed from a marketplace builds its optional packages (the shell "
                                    "parser of side-effect holds, the watchdog's) in its data folder, from your "
                                    "package index (about 35 MB); false = never, holds read shell the simpler way"),
    "statusline_chain_timeout_ms": (1000, _int(50, 10000), "budget for the chained user status line"),
    "statusline_color": (True, _bool, "ANSI colours in the status line"),
    "effects_hold": (True, _bool, "hold a repeat of a side effect already achieved (a POST, a release, a publish): "
                                  "ask, or deny when no one is there"),
    "effects_local_exempt": (True, _bool, "calls to 127.0.0.1 / localhost are never held (iterating on a local API)"),
    "effects_harmful": ([], _str_list, "your commands (a prefix of the command line) that must not run twice"),
    "effects_harmless": ([], _str_list, "your commands (a prefix) that are harmless to repeat: never held"),
    "watchdog_health_url": (None, _url, "model server liveness URL (e.g. http://host:8000/health)"),
    "watchdog_progress_url": (None, _url, "metrics URL whose counter must advance (progress probe)"),
    "watchdog_progress_metric": ("vllm:iteration_tokens_total", _str_or_null, "metric name for the progress probe"),
    "watchdog_progress_model": (None, _str_or_null, "model id for a 1-token completion probe (progress_url is then a completions URL)"),
    "watchdog_probe_timeout_s": (10, _num(0, 300), "per-probe deadline"),
    "watchdog_fail_threshold": (3, _int(1, 100), "consecutive failures before DOWN"),
    "watchdog_interval_s": (15, _num(0, 3600), "seconds between watchdog cycles"),
    "watchdog_grace_s": (120, _num(0, 86400), "grace after a state change before acting"),
    "watchdog_stall_s": (600, _num(0, 86400), "a turn with no transcript growth this long is stalled"),
    "watchdog_exit_hang_s": (30, _num(0, 86400), "alive this long after SessionEnd = hung on exit"),
    "watchdog_max_actions": (3, _int(0, 100), "cap per action kind per session"),
    "watchdog_backoff_s": (300, _num(0, 86400), "minimum spacing between two actions of one kind"),
    "watchdog_digest_file": (None, _str_or_null, "log file whose redacted tail goes into a nudge"),
    "watchdog_digest_command": (None, _str_or_null, "command whose redacted output goes into a nudge"),
    "watchdog_power_cycle_command": (None, _str_or_null, "run when the model server stays DOWN"),
    "watchdog_power_cycle_after_s": (900, _num(0, 86400), "DOWN this long before the power-cycle command"),
    "watchdog_power_cycle_cooldown_s": (3600, _num(0, 864000), "spacing between power cycles"),
    "watchdog_power_cycle_daily_cap": (3, _int(0, 100), "power cycles per day at most"),
    "watchdog_rotation_stuck_s": (900, _num(0, 864000), "ROTATING / AWAITING_MANUAL_CLEAR this long = stalled: "
                                                        "urgent push, the rotation retried once where safe"),
    "watchdog_quiet_s": (1, _num_from_zero(60), "no key from the user for this long before the watchdog types "
                                                "into a pane"),
}

DEFAULTS: "dict[str, Any]" = {k: v[0] for k, v in SCHEMA.items()}

# -- the trust boundary ----------------------------------------------------------
# What a repository's .claude/continuity.json may set.  An allow-list: a key not
# named here (and every key added later) is the user's alone.
#
# Any value: when rotation happens and how big its texts are.  None of these runs a
# command, names a host, or switches a check off (hooks stay fail-open whatever
# they say; a repo's sections only shape a template, as its CLAUDE.md could anyway).
REPO_ANY = frozenset((
    "window", "warn", "rotate", "hard", "rotate_tokens",
    "handoff_sections", "handoff_min_chars", "handoff_max_chars", "handoff_max_tries",
    "bootstrap_max_tokens", "statusline_color", "resume_stale_after_h",
))
# ... within sane bounds: a value past one would make every session of the checkout unusable (a window
# of 1000 tokens puts every session at 1600 %: every tool denied, a handoff forced at every turn end)
# or every rotation fail.  Such a value is ignored, with a warning (the user cannot remove a key the
# repository committed; :func:`_repo_layer`).  (key -> (test of the value, what it must be))
REPO_BOUNDS: "dict[str, tuple[Any, str]]" = {
    "window": (lambda v, d: v is None or v >= 32_000, "at least 32000 tokens"),
    "rotate_tokens": (lambda v, d: v is None or v >= 32_000, "at least 32000 tokens"),
    "warn": (lambda v, d: v >= 20, "at least 20 %"),
    "rotate": (lambda v, d: v >= 20, "at least 20 %"),
    "hard": (lambda v, d: v >= 20, "at least 20 %"),
    "handoff_min_chars": (lambda v, d: v <= d.get("handoff_max_chars", DEFAULTS["handoff_max_chars"]) // 2,
                          "at most half of handoff_max_chars"),
    "handoff_max_chars": (lambda v, d: v >= 2000, "at least 2000 characters"),
    "bootstrap_max_tokens": (lambda v, d: v >= 1000, "at least 1000 tokens"),
    "handoff_sections": (lambda v, d: len(v) <= 12, "at most 12 sections"),
}
# Only towards "cc-continuity does less": the one value a repo may choose (a bool),
# or "lower" (a cap it may only reduce).
REPO_NARROW: dict[str, bool | str] = {
    "enabled": False,            # opt the project out, never back in
    "tmux": False,               # never start typing into the user's terminal
    "precompact_block": False,   # let Claude Code's own compaction run
    "snapshot_untracked": False,  # record less of the work tree
    "turn_snapshots": False,     # no rolling turn-end snapshots
    "mod": False,                # hand over through tmux (or by hand) instead of the mod
    "compact_to_rotation": False,  # let Claude Code's own compaction run
    "snapshot_max_file_bytes": "lower",
    "snapshot_max_untracked_bytes": "lower",
    "snapshot_hook_wait_s": "lower",  # the snapshot then finishes in its background job
}
# Everything else is user-only, each for one of these reasons (SECURITY.md):
#   unattended                      loosens safety (--dangerously-skip-permissions)
#   ntfy_url, ntfy_token            contact a server / hand a token to it
#   notify_events                   what is sent (or silenced) to the user's phone
#   rotator_*, mod_standby_s        how keystrokes are typed into the user's terminal
#   statusline_chain_timeout_ms     how long the user's own status line command may run
#   effects_*                       which repeats of a side effect are held (a repository may not wave one through)
#   watchdog_*                      probe URLs, commands and files run or read, process kills,
#                                   when it types into a pane or re-spawns a rotator (rotation_stuck_s)
#   snapshot_timeout_s              a short one would make every snapshot fail
#   snapshot_keep, snapshot_max_age_days   deleting the user's snapshots sooner is not "doing less"
#   share_remote, share_untracked   what leaves the machine, and to which server
#   share_unclaimed_alert_min       when the watchdog contacts that server (and pushes)
#   fetch_packages                  whether a package index is contacted (and what is installed from it); off, the
#                                   holds' shell parser is never built (a repository may not weaken the holds)
#   mcp_server                      the same index contacted for the MCP SDK, and a server started in every session
#   mcp_clients                     who may change the project's records through the MCP server
#   handoff_require_sources         each rejection costs the user a model turn (three: a degraded handoff)


class Config:
    """The effective values plus where each came from."""

    def __init__(self) -> None:
        self.values: "dict[str, Any]" = {k: (list(v) if isinstance(v, list) else v) for k, v in DEFAULTS.items()}
        self.sources: "dict[str, str]" = {k: "default" for k in DEFAULTS}
        self.warnings: "list[str]" = []
        # (repository file, key, warning) for each key the trust boundary dropped
        self.ignored: "list[tuple[str, str, str]]" = []
        self.user_project_file: "str | None" = None

    def __getitem__(self, key: str) -> "Any":
        return self.values[key]

    def get(self, key: str, default: object = None) -> "Any":
        return self.values.get(key, default)

    def source(self, key: str) -> str:
        return self.sources[key]

    def thresholds(self) -> tuple[float, float, float]:
        return self.values["warn"], self.values["rotate"], self.values["hard"]


def project_file(root: str) -> str:
    """The repository's file (untrusted: it may only narrow)."""
    return os.path.join(root, ".claude", "continuity.json")


def user_project_file(root: str) -> str:
    """The user's own per-project settings, in the state dir (trusted)."""
    return paths.project_config_file(root)


def layer_files(root: str | None = None) -> list[str]:
    """Every file ``load(root)`` reads, in precedence order (for cache invalidation)."""
    files = [paths.config_file()]
    if root:
        files += [project_file(root), user_project_file(root)]
    return files


def repo_may_set(key: str, value: object, current: "Any") -> bool:
    """Would ``key: value`` in a repository file only narrow ``current``?  (The rule, in one place.)"""
    if key in REPO_ANY:
        return True
    if key not in REPO_NARROW:
        return False
    rule = REPO_NARROW[key]
    if rule == "lower":
        return isinstance(value, int) and not isinstance(value, bool) and value <= current
    return value == rule or value == current


# No config file of ours comes near this; a bigger one is refused unread (a link to /dev/zero, a dump).
MAX_FILE_BYTES = 1 << 20


def _read(path: str, inside: str | None = None) -> "dict[str, Any] | None":
    """The parsed object in ``path``, or None when the file does not exist.

    A bounded read (:func:`safefile.read_bounded`): a regular file within
    ``MAX_FILE_BYTES``; ``inside``: a repository's root, outside which no link is followed.
    """
    try:
        raw = safefile.read_bounded(path, MAX_FILE_BYTES, inside=inside)
    except FileNotFoundError:
        return None
    except safefile.NotRegular as e:
        raise ConfigError(path, None, str(e).replace(path + " ", "", 1)) from None
    except OSError as e:
        raise ConfigError(path, None, "cannot read: %s" % e.strerror) from None
    if not raw.strip():
        return {}
    try:
        doc = fastjson.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(path, None, "not valid JSON (%s)" % e) from None
    if not isinstance(doc, dict):
        raise ConfigError(path, None, "must contain a JSON object")
    return doc


def validate(doc: "dict[str, Any]", path: str, warnings: list[str] | None = None) -> None:
    """Raise ConfigError for the first bad value; collect unknown keys as warnings."""
    for key, value in doc.items():
        if key.startswith("$") or key.startswith("//"):
            continue  # "$schema" / comment keys
        spec = SCHEMA.get(key)
        if spec is None:
            if warnings is not None:
                warnings.append("%s: unknown key %r ignored" % (path, key))
            continue
        problem = spec[1](value)
        if problem:
            raise ConfigError(path, key, problem)


def _check_order(cfg: Config, layers: list[str]) -> None:
    w, r, h = cfg.thresholds()
    if w <= r <= h:
        return
    pair = ("warn", "rotate") if w > r else ("rotate", "hard")
    # Blame the key a file set (the later layer when both were), not a default.
    order = ["default"] + list(layers)
    rank = lambda k: order.index(cfg.source(k)) if cfg.source(k) in order else len(order)
    key = max(pair, key=rank)
    raise ConfigError(cfg.source(key), key,
                      "thresholds must satisfy warn <= rotate <= hard (got %g, %g, %g)" % (w, r, h))


def _repo_layer(cfg: Config, path: str, doc: "dict[str, Any]") -> "dict[str, Any]":
    """The part of a repository file that may apply; every other key is ignored with a warning.

    An ignored key is not validated either: it can neither take effect nor break the load.
    """
    allowed: "dict[str, Any]" = {}
    merged = dict(cfg.values, **{k: v for k, v in doc.items() if k in SCHEMA and _valid(k, v)})
    for key, value in doc.items():
        bound = REPO_BOUNDS.get(key)
        if bound is not None and _valid(key, value) and not bound[0](value, merged):
            message = ("%s: key %r ignored: %r would make every session of this checkout unusable or every "
                       "rotation fail (a repository may set it only within bounds: %s)" % (path, key, value, bound[1]))
            cfg.ignored.append((path, key, message))
            cfg.warnings.append(message)
        elif key not in SCHEMA or key in REPO_ANY:
            allowed[key] = value  # unknown and comment keys: validate() warns as for any file
        elif key in REPO_NARROW and (not _valid(key, value) or repo_may_set(key, value, cfg.values[key])):
            allowed[key] = value  # (a wrong value is an error naming file and key, as in any file)
        else:
            message = (
                "%s: key %r ignored: a repository file may only narrow cc-continuity, and this key could run "
                "a command, contact a server or loosen a safety check; to set it for this project, use "
                "`cc-continuity configure --project` (kept in %s, outside the repository)"
                % (path, key, cfg.user_project_file))
            cfg.ignored.append((path, key, message))
            cfg.warnings.append(message)
    return allowed


def _valid(key: str, value: object) -> bool:
    return SCHEMA[key][1](value) is None


def load(project_root: str | None = None, env: "Mapping[str, str] | None" = None) -> Config:
    """The effective config for ``project_root`` (None: global only)."""
    env = os.environ if env is None else env
    cfg = Config()
    layers = layer_files(project_root)
    repo = layers[1] if project_root else None
    cfg.user_project_file = layers[2] if project_root else None
    for path in layers:
        doc = _read(path, inside=project_root if path == repo else None)
        if not doc:
            continue
        if path == repo:
            doc = _repo_layer(cfg, path, doc)
        validate(doc, path, cfg.warnings)
        for key, value in doc.items():
            if key in SCHEMA:
                cfg.values[key] = value
                cfg.sources[key] = path
    if env.get("CC_CONTINUITY") == "0":
        cfg.values["enabled"] = False
        cfg.sources["enabled"] = "env CC_CONTINUITY=0"
    if env.get("CC_CONTINUITY_UNATTENDED") == "1":
        cfg.values["unattended"] = True
        cfg.sources["unattended"] = "env CC_CONTINUITY_UNATTENDED=1"
    _check_order(cfg, layers)
    return cfg


def _update(path: str, changes: "dict[str, Any]") -> "dict[str, Any]":
    """Validate ``changes`` merged over ``path`` and write atomically; None deletes a key."""
    doc = _read(path) or {}
    new = dict(doc)
    for key, value in changes.items():
        if key not in SCHEMA:
            raise ConfigError(path, key, "unknown key")
        if value is None and SCHEMA[key][0] is not None:
            new.pop(key, None)
        else:
            new[key] = value
    validate(new, path)
    merged = Config()
    for key, value in new.items():
        if key in SCHEMA:
            merged.values[key] = value
            merged.sources[key] = path
    _check_order(merged, [path])
    import json  # not on the hook path

    paths.ensure_dir(os.path.dirname(path))
    atomic.write_text(path, json.dumps(new, indent=2, sort_keys=False) + "\n", mode=paths.FILE_MODE)
    return new


def update_global(changes: "dict[str, Any]") -> "dict[str, Any]":
    paths.ensure_dir(paths.home())
    return _update(paths.config_file(), changes)


def update_project(root: str, changes: "dict[str, Any]") -> "dict[str, Any]":
    """The user's per-project settings: in the state dir, never in the repository."""
    path = user_project_file(root)
    paths.ensure_dir(os.path.dirname(path))
    return _update(path, changes)
