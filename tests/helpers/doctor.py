"""What the doctor tests share (tests/doctor/, and the hosts' checks in tests/hosts/): a complete Claude Code
install laid out in a temp HOME (:class:`Install`, the ``inst`` fixture their conftest.py takes from here),
and :func:`red` (a row that failed, naming each fragment, with a fix)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from cc_continuity import __version__, atomic, paths
from cc_continuity.hosts import checkup
from cc_continuity.install import blocks, settings, wrapper
from cc_continuity.install import skills as install_skills
from helpers import REPO

PKG = os.path.join(REPO, "cc_continuity")
PYTHON = os.path.realpath(sys.executable)


class Install:
    """A complete install, laid out the way ``cc-continuity install`` lays it out."""

    def __init__(self, tmp_path, repo, home):
        self.repo, self.home = repo, home
        self.cchome = paths.home()
        paths.ensure_dir(self.cchome)
        self.app = os.path.join(self.cchome, "app.d", "v1")
        shutil.copytree(PKG, os.path.join(self.app, "cc_continuity"), ignore=shutil.ignore_patterns("__pycache__"))
        os.makedirs(os.path.join(self.app, "lib"))  # the optional packages the hooks' python -S reads (the parser's)
        for name in ("tree_sitter", "tree_sitter_bash"):
            os.symlink(importlib.util.find_spec(name).submodule_search_locations[0], os.path.join(self.app, "lib", name))
        os.symlink("app.d/v1", os.path.join(self.cchome, "app"))
        self.settings_path = os.path.join(paths.claude_config_dir(), "settings.json")
        paths.ensure_dir(paths.claude_config_dir())
        self.write_settings(settings.render_fragment(settings.load_fragment(), PYTHON, os.path.join(self.cchome, "app")))
        self.launcher = os.path.join(paths.ensure_dir(os.path.join(self.cchome, "bin")), "cc-continuity")
        with open(self.launcher, "w") as f:
            f.write("#!/bin/sh\nexec %s -m cc_continuity.cli \"$@\"\n" % PYTHON)
        os.chmod(self.launcher, 0o700)
        for name, text in install_skills.shipped(install_skills.model_command(self.launcher)).items():
            target = install_skills.target(paths.claude_config_dir(), name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(text)
        self.bashrc = os.path.join(str(home), ".bashrc")
        with open(self.bashrc, "w") as f:
            f.write("export EDITOR=vi\n" + blocks.render(wrapper.BLOCK_NAME, __version__,
                                                         wrapper.render("bash", self.launcher), wrapper.BLOCK_STYLE))
        self.manifest = {"version": __version__, "launcher": self.launcher, "app": os.path.join(self.cchome, "app"),
                         "rc": [{"path": self.bashrc, "created": True, "shell": "bash"}], "statusline_chain": None}
        self.save_manifest()
        self.trust(str(repo))
        bindir = tmp_path / "bin"
        bindir.mkdir()
        self.claude = bindir / "claude"
        self.claude_version("2.1.328")
        self.env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), SHELL="/bin/bash",
                        **{wrapper.ACTIVE_ENV: "1"})

    def write_settings(self, doc):
        with open(self.settings_path, "w") as f:
            json.dump(doc, f, indent=2)

    def read_settings(self):
        with open(self.settings_path) as f:
            return json.load(f)

    def save_manifest(self):
        atomic.write_text(os.path.join(self.cchome, "install.json"), json.dumps(self.manifest))

    def trust(self, *dirs, path=None):
        doc = {"projects": {os.path.realpath(d): {"hasTrustDialogAccepted": True} for d in dirs}}
        with open(path or os.path.join(str(self.home), ".claude.json"), "w") as f:
            json.dump(doc, f)

    def claude_version(self, v):
        self.claude.write_text("#!/bin/sh\necho '%s (Claude Code)'\n" % v)
        self.claude.chmod(0o755)

    def check(self, *names, cwd=None, **kw):
        """The results of the named checks (all when none are named), by name."""
        chosen = [c for c in checkup.CHECKS if c.__name__ in ["check_" + n.replace("-", "_") for n in names]] \
            if names else None  # (none named: those checkup chooses for this install)
        ctx = checkup.Context(env=kw.pop("env", self.env), cwd=str(cwd or self.repo), **kw)
        return {r.name: r for r in checkup.run_checks(ctx, chosen)}

    def cli(self, *args, env=None):
        return subprocess.run([sys.executable, "-m", "cc_continuity.cli", "doctor", *args], env=env or self.env,
                              cwd=str(self.repo), capture_output=True, text=True, timeout=60)


@pytest.fixture
def inst(tmp_path, git_repo, isolated_home):
    return Install(tmp_path, git_repo, isolated_home)


def red(result, *fragments):
    assert not result.ok, result
    for frag in fragments:
        assert frag in result.detail + " " + (result.fix or ""), result
    assert result.fix
