"""End-to-end tests that drive the real Claude Code binary (marker: e2e)."""
