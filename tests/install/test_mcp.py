"""install/mcp.py: the server's tool lists as install allows them, and the SDK's copy beside the app copy."""

import os
import subprocess
import sys

import pytest

from cc_continuity.install import app, mcp
from cc_continuity.install.plan import size_text

pytest.importorskip("mcp")


def test_the_tools_install_allows_are_the_ones_the_server_marks_read_only():
    import anyio

    from cc_continuity.mcpserver import server

    listed = anyio.run(server.build(lambda rec: None).list_tools)
    read_only = {t.name for t in listed if t.annotations is not None and t.annotations.read_only_hint}
    assert read_only == set(mcp.READ_ONLY)
    assert {t.name for t in listed} - read_only == set(mcp.MUTATING)
    assert all(t.description.endswith("Read-only.") for t in listed if t.name in read_only)


def test_an_extra_a_requirement_asks_for_is_followed():
    """mcp needs pyjwt[crypto]: without the extra's own requirements the copy lacked cryptography."""
    names = {d.metadata["Name"].lower() for d in app.dependency_dists((mcp.SDK,))}
    assert {"mcp", "pyjwt", "cryptography", "pydantic"} <= names
    assert "cryptography" not in {d.metadata["Name"].lower() for d in app.dependency_dists(("pyjwt",))}


def test_the_sdks_copy_serves_on_a_python_that_has_none_of_our_packages(tmp_path):
    """The copy is whole: the base interpreter with -S (no site-packages) imports the server from the app's
    sources and the copy alone; a second make keeps it; remove takes it out."""
    home = str(tmp_path / "cch")
    os.makedirs(home)
    assert mcp.make(home) is True and mcp.make(home) is False
    src = os.path.dirname(os.path.dirname(os.path.abspath(mcp.__file__)))
    code = "import sys; sys.path[0:0] = [%r, %r]; from cc_continuity.mcpserver import server; print('ok')" % (
        src, mcp.lib_dir(home))
    res = subprocess.run([app.base_interpreter(), "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
    print("the SDK's copy: %s" % size_text(mcp.lib_dir(home)))
    assert mcp.remove(home) is True and not os.path.exists(mcp.lib_dir(home))


def test_without_the_sdk_install_says_how_to_get_it(monkeypatch):
    def missing(roots):
        raise app.AppError("runtime dependency mcp is not installed")
    monkeypatch.setattr(app, "dependency_dists", missing)
    with pytest.raises(mcp.errors.InstallError, match=r"pipx inject cc-continuity 'mcp>=2.3,<3'"):
        mcp.sdk_dists()
    assert sys.executable
