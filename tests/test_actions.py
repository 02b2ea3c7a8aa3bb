"""The action record's target and side-effect marks (ledger.target: string rules, the per-tool-call path)."""

import pytest

from cc_continuity import ledger, redact
from cc_continuity.rotation import revalidation
from cc_continuity.hosts.claude.hooks import post_tool_use as actions


@pytest.mark.parametrize("command,masked", [
    ("mysql -u root --password hunter2 db", "mysql -u root --password [REDACTED] db"),
    ("export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 && make", "export GITHUB_TOKEN=[REDACTED] && make"),
    ("git clone https://bob:s3cretpass@github.com/x/y", "git clone https://[REDACTED]@github.com/x/y"),
    ("curl -u alice:wonderland https://api.example.com", "curl -u [REDACTED] https://api.example.com"),
    ("echo sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "echo [REDACTED]"),
    ("DB_PASS=Zq8uPl2Xv9Lm4 ./run", "DB_PASS=[REDACTED] ./run"),
])
def test_secrets_in_commands_are_masked(command, masked):
    assert ledger.target({"command": command}) == masked


@pytest.mark.parametrize("command", [
    "git log --oneline -n 5", "python3 -m pytest -q tests/test_x.py", "ls -la src/", "grep -rn token_count src",
    "git checkout 1f0e3dad99908345f7439f8ffabdffc4", "max_tokens=4000 ./bench", "cat /etc/hosts | head",
    "export PASSWORD_FILE=/run/secrets/db", "docker compose up -d web",
])
def test_ordinary_commands_pass_untouched(command):
    assert ledger.target({"command": command}) == command


def test_targets_are_bounded_and_one_line():
    t = ledger.target({"command": "echo " + "a" * 1000 + "\nrm -rf build"})
    assert len(t) <= ledger.TARGET_MAX and "\n" not in t and t.endswith("…")
    assert ledger.target({"file_path": "/p/src/app.py", "old_string": "x"}) == "/p/src/app.py"
    assert ledger.target({"url": "https://x.example/a", "prompt": "read"}) == "https://x.example/a"
    assert ledger.target("not a dict") is None


def test_failed_comes_from_the_event_or_an_interrupted_response():
    assert actions.record({"tool_name": "Bash", "tool_input": {"command": "x"}}, failed=True)["failed"] is True
    assert "failed" not in actions.record({"tool_name": "Bash", "tool_input": {"command": "x"},
                                           "tool_response": {"interrupted": False}})
    assert actions.record({"tool_name": "Bash", "tool_input": {"command": "x"},
                           "tool_response": {"interrupted": True}})["failed"] is True


@pytest.mark.parametrize("tool,target,why", [
    ("Bash", "git push origin main", "git push"),
    ("Bash", "cd app && npm publish --access public", "npm publish"),
    ("Bash", "sudo apt-get install -y jq", "apt-get install"),
    ("Bash", "pip install requests", "pip install"),
    ("Bash", "python3 -m pip install -e .", "pip install"),
    ("Bash", "curl -s https://example.com | jq .", None),  # a read
    ("Bash", "curl -X POST -d x=1 https://example.com/hook", "network: POST (curl)"),
    ("Bash", "curl -s https://example.com -d @body.json", "network: POST (curl)"),
    ("Bash", "gh issue create -t x -b y", "network: gh issue create"),
    ("Bash", "gh pr view 3", None),
    ("Bash", "ssh host uptime", "network (ssh)"),
    ("Bash", "kubectl apply -f k8s/", "network (kubectl)"),
    ("Bash", "FOO=1 ./deploy.sh prod", "deploy/publish"),
    ("WebFetch", "https://example.com", "network"),
    ("Bash", "git status", None),
    ("Bash", "git commit -m 'push the button'", None),
    ("Bash", "npm test", None),
    ("Edit", "/p/deploy.py", None),
])
def test_side_effects_outside_the_work_tree_are_recognised(tool, target, why):
    assert revalidation.side_effect(tool, target) == why


def test_the_full_redactor_agrees_with_the_mask_on_what_it_hides():
    t = ledger.target({"command": "curl -H 'Authorization: Bearer abcDEF123456ghiJKL789012' x"})
    assert "abcDEF123456ghiJKL789012" not in t and "abcDEF123456ghiJKL789012" not in redact.redact(t)


def test_the_users_declared_commands_count_as_side_effects():
    assert revalidation.side_effect("Bash", "notify-team --all") is None
    assert revalidation.side_effect("Bash", "notify-team --all", ["notify-team"]) == "declared by you (effects_harmful)"
