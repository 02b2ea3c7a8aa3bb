"""Every host folder is one unit of the same shape (issue 35): its install piece (hosts/<name>/install.py) and
its doctor checks (hosts/<name>/doctor.py) have the names hosts/setup.py and hosts/checkup.py use, found by the
registry's names; every row has its place in the report's order."""

import inspect

import pytest

from cc_continuity import hosts
from cc_continuity.doctor import system
from cc_continuity.hosts import mcpcheck, servers, checkup, setup

INSTALL_UNIT = {"NAME": str, "HOOK_FILE": str, "RECORD_KEYS": tuple, "install": ("opts", "out", "check_only"),
                "uninstall": ("out", "rec"), "still_installed": ("rec",)}
DOCTOR_UNIT = {"NAME": str, "ROW": str, "INSTALL_FIX": str, "NEXT": str, "RECORD_KEYS": tuple, "CHECKS": list,
               "installed": ("ctx",), "hook_file": ("ctx",), "own_copy": ("ctx",), "stale_files": ("now",),
               "amend": ("ctx", "results")}


def _has(unit, shape):
    for name, kind in shape.items():
        value = getattr(unit, name)
        if isinstance(kind, tuple):
            assert tuple(inspect.signature(value).parameters) == kind, (unit.__name__, name)
        else:
            assert isinstance(value, kind) and value, (unit.__name__, name)


@pytest.mark.parametrize("name", sorted(hosts.HOSTS))
def test_each_host_folder_has_its_install_piece_and_doctor_unit(name):
    piece, unit = setup.PIECES[name], checkup.UNITS[name]
    assert piece.__name__ == "cc_continuity.hosts.%s.install" % name
    assert unit.__name__ == "cc_continuity.hosts.%s.doctor" % name
    _has(piece, INSTALL_UNIT)
    _has(unit, DOCTOR_UNIT)
    assert (unit.NAME, unit.RECORD_KEYS) == (piece.NAME, piece.RECORD_KEYS)
    assert all(c.__name__.startswith("check_") for c in unit.CHECKS)


def test_the_registry_orders_the_agents_and_their_record_keys_are_their_own():
    assert setup.AGENTS == checkup.AGENTS == tuple(hosts.HOSTS) == ("claude", "codex", "gemini")
    keys = [k for piece in setup.PIECES.values() for k in piece.RECORD_KEYS]
    assert len(keys) == len(set(keys)), "no record key is two agents'"
    assert len({u.ROW for u in checkup.UNITS.values()}) == len(checkup.UNITS)


def test_every_row_has_its_place_in_the_report_and_every_place_a_row():
    names = [c.__name__[len("check_"):] for c in checkup.CHECKS]
    assert sorted(names) == sorted(checkup.ORDER), "checkup.ORDER places every check once, and only checks"
    assert names == list(checkup.ORDER)
    assert set(checkup.CHECKS) == set(system.CHECKS) | {c for u in checkup.UNITS.values() for c in u.CHECKS} | {
        servers.check_server_window, servers.check_small_window,  # (every host's model server, its window)
        mcpcheck.check_mcp_server}  # (the MCP server, whichever hosts it is registered with)
