"""``$CC_CONTINUITY_HOME/install.json``: what install changed, so uninstall can undo exactly that.

Read by uninstall, ``doctor`` and the status line (``statusline_chain``: the
user's original statusLine object, which ours runs first).  0600: it holds the
original settings.json, which may contain the user's tokens.

Keys: ``version``, ``installed_at``, ``python``, ``app``, ``launcher``,
``path_link`` (the PATH symlink we made, or null), ``settings`` (the record from
:func:`settings.plan_install` plus ``path``), ``statusline_chain``,
``claude_md`` / ``rc`` (lists of ``{"path", "created"}``), ``skills``
(``{path: sha256}``), ``created_dirs``; ``codex`` (``install --agent codex``: ``home``, ``hooks``
(hooks.json's record, as ``settings``), ``config`` (config.toml: whether it existed and had a
``[hooks.state]`` header, after ``--trust`` its bytes before and the keys trusted), ``hashes`` (our
entries', every install's), ``installed_at`` / ``installed_ts``).  Each agent's part stays when
the other's install or uninstall runs.
"""

import json
import os

from .. import atomic, errors, paths

NAME = "install.json"


ManifestError = errors.ManifestError  # (defined with every error class, in errors.py)


def path():
    return os.path.join(paths.home(), NAME)


def load():
    """The manifest, or None when there is none.  ManifestError when it is unreadable."""
    p = path()
    try:
        with open(p, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ManifestError("%s: not valid JSON (%s)" % (p, e)) from None
    if not isinstance(doc, dict):
        raise ManifestError("%s: not a JSON object" % p)
    return doc


def save(doc):
    paths.ensure_dir(paths.home())
    atomic.write_text(path(), json.dumps(doc, indent=2, ensure_ascii=False) + "\n", mode=paths.FILE_MODE)


def remove():
    try:
        os.unlink(path())
        return True
    except FileNotFoundError:
        return False
