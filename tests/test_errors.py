"""One error base, one handler: a user-facing error anywhere is one line and a status."""

import os
import subprocess
import sys

from cc_continuity import cli, config, errors, tmux
from cc_continuity.snapshot import gitrun
from cc_continuity.tmux import rotator
from cc_continuity.install import app, blocks, manifest, plugin, settings
from cc_continuity.install import InstallError
from cc_continuity.watch import service
from cc_continuity import rehearse
from cc_continuity.rehearse import scripted_model


def test_every_user_facing_error_has_its_area_and_its_builtin():
    areas = {
        errors.ConfigError: [(config.ConfigError, ValueError)],
        errors.InstallError: [(InstallError, Exception), (settings.SettingsError, ValueError),
                              (blocks.BlockError, ValueError), (manifest.ManifestError, ValueError),
                              (app.AppError, RuntimeError),
                              (plugin.PluginError, RuntimeError)],
        errors.RotationError: [(gitrun.SnapshotError, RuntimeError), (tmux.TmuxError, RuntimeError),
                               (rotator.RotationFailed, RuntimeError), (rotator.PlanError, ValueError)],
        errors.WatchError: [(service.ServiceError, RuntimeError)],
        errors.RehearsalError: [(rehearse.RehearsalError, RuntimeError), (scripted_model.ScenarioError, ValueError)],
    }
    for base, kinds in areas.items():
        assert issubclass(base, errors.Error)
        for cls, builtin in kinds:
            assert issubclass(cls, base) and issubclass(cls, builtin), cls


def test_the_cli_turns_an_error_into_one_line_and_its_status(tmp_path, monkeypatch, capsys):
    def boom(args):
        raise settings.SettingsError("~/.claude/settings.json: not valid JSON (line 3)")

    monkeypatch.setattr(cli, "build_parser", lambda verbs=None: _parser_with(boom))
    assert cli.main(["explode"]) == 1
    err = capsys.readouterr().err
    assert err == "cc-continuity explode: ~/.claude/settings.json: not valid JSON (line 3)\n"
    log = open(os.path.join(os.environ["CC_CONTINUITY_HOME"], "logs", "cli.log"), encoding="utf-8").read()
    assert "SettingsError" in log and "Traceback" in log  # the details are kept, not shown


def test_a_bad_config_file_is_one_line_from_a_real_command(tmp_path):
    home = os.environ["CC_CONTINUITY_HOME"]
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.json"), "w") as f:
        f.write("{not json")
    r = subprocess.run([sys.executable, "-m", "cc_continuity", "config", "show"], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=60)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "config.json" in r.stderr


def _parser_with(fn):
    import argparse

    p = argparse.ArgumentParser(prog="cc-continuity")
    sub = p.add_subparsers(dest="verb")
    sub.add_parser("explode").set_defaults(func=fn)
    return p
