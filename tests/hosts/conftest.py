"""The hosts' tests' fixtures: ``inst`` (helpers/doctor.py), a complete Claude Code install in this test's temp
HOME, for the hosts' doctor checks (tests/doctor/ takes the same)."""

from helpers.doctor import inst  # noqa: F401 (the fixture, shared with tests/doctor/)
