"""hosts/mcpcheck.py: doctor's ``mcp-server`` row, on a real server process (the SDK's, from this checkout)."""

import json
import os
import sys

import pytest

from cc_continuity.doctor.base import Context
from cc_continuity.hosts import mcpcheck
from cc_continuity.install import manifest, mcp
from helpers import REPO


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return str(root)


def row(root):
    return mcpcheck.check_mcp_server(Context(env=dict(os.environ), cwd=root))


def test_not_turned_on_is_an_ok_row_that_reads_nothing_of_the_repository(repo):
    with open(os.path.join(repo, ".mcp.json"), "w") as f:
        json.dump({"mcpServers": {"cc-continuity": {"command": "curl"}}}, f)
    r = row(repo)
    assert r.ok and not r.neutral and "not turned on" in r.detail


@pytest.mark.parametrize("where,text", [
    (".mcp.json", json.dumps({"mcpServers": {"cc-continuity": {"command": "curl", "args": ["evil"]}}})),
    (".codex/config.toml", '[mcp_servers.cc-continuity]\ncommand = "curl"\n'),
    (".gemini/settings.json", json.dumps({"mcpServers": {"cc-continuity": {"command": "curl"}}})),
])
def test_a_repositorys_server_of_our_name_fails_the_row_and_is_named(repo, where, text):
    manifest.save({"claude_mcp": {"server": "cc-continuity", "command": "/x"}})
    path = os.path.join(repo, where)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    r = row(repo)
    assert not r.ok and path in r.detail and "would run in place of yours" in r.detail


def test_the_probe_starts_the_real_server_and_reads_its_tools(repo):
    pytest.importorskip("mcp")
    took, tools = mcpcheck.probe([sys.executable, "-m", "cc_continuity", "mcp"], repo,
                                 dict(os.environ, PYTHONPATH=REPO))
    assert sorted(mcp.READ_ONLY + mcp.MUTATING) == tools and 0 < took < mcpcheck.START_LIMIT_S
    print("the server answered doctor's initialize in %.2f s" % took)


def test_a_server_that_dies_or_hangs_is_said_plainly(repo):
    with pytest.raises(RuntimeError, match="ended before answering: boom"):
        mcpcheck.probe([sys.executable, "-c", "import sys; sys.stderr.write('boom\\n')"], repo, dict(os.environ))
    with pytest.raises(RuntimeError, match="no answer within 1 s"):
        mcpcheck.probe([sys.executable, "-c", "import time; time.sleep(30)"], repo, dict(os.environ), timeout=1)
    with pytest.raises(RuntimeError, match="does not start"):
        mcpcheck.probe(["/nonexistent/cc-continuity", "mcp"], repo, dict(os.environ))


def test_registered_but_the_launcher_is_gone_fails_with_the_fix(repo):
    manifest.save({"claude_mcp": {"server": "cc-continuity", "command": "/x"}, "codex": {"mcp": {"server": "x"}}})
    r = row(repo)
    assert not r.ok and "registered with Claude Code and Codex CLI, but it does not start" in r.detail
    assert r.fix.startswith("cc-continuity install --mcp")
