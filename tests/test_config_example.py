"""config.example.json documents every key and is itself a valid config."""

import json
import os
import shutil

from cc_continuity import config

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config.example.json")


def test_example_lists_every_key_with_its_default():
    with open(EXAMPLE) as f:
        doc = json.load(f)
    assert list(doc) == list(config.SCHEMA)
    assert doc == config.DEFAULTS


def test_example_loads_as_a_global_config(tmp_path):
    os.makedirs(config.paths.home(), exist_ok=True)
    shutil.copy(EXAMPLE, config.paths.config_file())
    cfg = config.load()
    assert cfg.warnings == []
    assert cfg.source("rotate") == config.paths.config_file()
