"""The ``inst`` fixture: a complete install in this test's temp HOME (tests/conftest.py makes the HOME)."""

import pytest

from .common import Install


@pytest.fixture
def inst(tmp_path, git_repo, isolated_home):
    return Install(tmp_path, git_repo, isolated_home)
