"""The ``inst`` fixture (helpers/doctor.py): a complete install in this test's temp HOME (tests/conftest.py makes
the HOME)."""

from helpers.doctor import inst  # noqa: F401 (the fixture, shared with tests/hosts/)
