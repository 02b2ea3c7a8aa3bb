"""A script of the repository's bench/ folder as a module (bench/ holds scripts, not a package)."""

import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def path(name):
    return os.path.join(REPO, "bench", name + ".py")


def load(name):
    """``bench/<name>.py`` imported once, as the module ``bench_<name>``."""
    key = "bench_" + name
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path(name))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]
