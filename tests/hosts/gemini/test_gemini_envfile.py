"""A repository's .env is not the user (hosts/gemini/envfile.py): which file Gemini 0.61 loads for a folder, how
dotenv reads it, and what our hook unsets of what it gave Gemini's environment.  The unsetting runs in a child
interpreter, as the hook does (it changes its own process's environment)."""

import json
import os
import subprocess
import sys

import pytest

from cc_continuity.hosts.gemini import envfile
from helpers import REPO
from helpers.codex import write


def test_the_file_gemini_loads_is_the_first_up_the_tree(tmp_path):
    home, repo = tmp_path / "uhome", tmp_path / "w" / "repo"
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    home.mkdir()
    assert envfile.loaded_file(str(deep), str(home)) is None
    write(str(home / ".env"), b"A=1\n")
    assert envfile.loaded_file(str(deep), str(home)) == str(home / ".env")
    write(str(home / ".gemini" / ".env"), b"A=1\n")
    assert envfile.loaded_file(str(deep), str(home)) == str(home / ".gemini" / ".env")
    write(str(tmp_path / "w" / ".env"), b"A=1\n")
    assert envfile.loaded_file(str(deep), str(home)) == str(tmp_path / "w" / ".env")
    write(str(repo / ".env"), b"A=1\n")
    assert envfile.loaded_file(str(deep), str(home)) == str(repo / ".env")
    write(str(repo / ".gemini" / ".env"), b"A=1\n")
    assert envfile.loaded_file(str(deep), str(home)) == str(repo / ".gemini" / ".env")


def test_values_are_read_as_dotenv_reads_them():
    text = ("# a comment\nexport A=1\nB = \"two\\nlines\" # x\nC='q # kept'\nD=bare value # comment\nE=\n"
            "F: colon\r\nG=`tick`\n  H=  padded  \nnot a line\nI=\"unterminated\n")
    got = envfile.parse(text)
    assert got == {"A": "1", "B": "two\nlines", "C": "q # kept", "D": "bare value", "E": "", "F": "colon",
                   "G": "tick", "H": "padded", "I": '"unterminated'}


def _scrubbed(cwd, env):
    code = ("import json, os, sys; sys.path[0] = %r\nfrom cc_continuity.hosts.gemini import envfile\n"
            "gone = envfile.scrub()\nprint(json.dumps([gone, dict(os.environ)]))" % REPO)
    p = subprocess.run([sys.executable, "-E", "-S", "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("where", [".gemini/.env", ".env"])
def test_what_a_repository_gave_is_unset_and_what_the_user_set_stays(tmp_path, where):
    home, repo = tmp_path / "uhome", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    write(str(repo / where), b"CC_CONTINUITY_HOME=/tmp/evil\nCC_CONTINUITY=0\nGIT_CONFIG_COUNT=1\n"
                             b"GIT_CONFIG_KEY_0=core.fsmonitor\nGIT_CONFIG_VALUE_0='touch PWNED'\nPATH=/usr/bin:/bin\n")
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "CC_CONTINUITY_HOME": "/tmp/evil", "CC_CONTINUITY": "1",
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": "touch PWNED"}
    gone, after = _scrubbed(str(repo), env)
    assert sorted(gone) == ["CC_CONTINUITY_HOME", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"]
    assert after["CC_CONTINUITY"] == "1"  # the user's: Gemini never overrides a name already set
    assert after["PATH"] == "/usr/bin:/bin" and "CC_CONTINUITY_HOME" not in after


def test_the_users_own_files_are_theirs(tmp_path):
    home = tmp_path / "uhome"
    project = home / "code" / "p"
    project.mkdir(parents=True)
    for where in (".gemini/.env", ".env"):
        write(str(home / where), b"CC_CONTINUITY_HOME=/mine\n")
        gone, after = _scrubbed(str(project), {"HOME": str(home), "PATH": "/usr/bin:/bin",
                                               "CC_CONTINUITY_HOME": "/mine"})
        assert gone == [] and after["CC_CONTINUITY_HOME"] == "/mine"
        os.unlink(str(home / where))


def test_the_cache_holds_digests_never_values_and_a_changed_file_is_read_again(tmp_path):
    home, repo = tmp_path / "uhome", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    state = tmp_path / "state"
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "CC_CONTINUITY_HOME": str(state), "API_TOKEN": "s3cret-value"}
    write(str(repo / ".env"), b"API_TOKEN=s3cret-value\n")
    assert _scrubbed(str(repo), env)[0] == ["API_TOKEN"]
    cache = state / "runtime" / "gemini" / "envfile.json"
    assert b"s3cret" not in cache.read_bytes() and oct(cache.stat().st_mode & 0o777) == "0o600"
    assert _scrubbed(str(repo), env)[0] == ["API_TOKEN"]  # from the cache
    write(str(repo / ".env"), b"API_TOKEN=another-value-now\n")
    assert _scrubbed(str(repo), env)[0] == []  # the file changed: read again, the user's value stays
