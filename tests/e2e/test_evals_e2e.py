"""The eval suite's mechanics, offline: ``claude plugin eval`` against the scripted model.

Every case in evals/ loads, its scaffold runs, the with-plugin arm rotates in-process (the
plugin's hooks and its mod load in the runner's isolated ``claude -p`` runs; the mod clears
and submits the continuation), the no-plugin arm runs too, and every grader is scored.  The
scripted model plays each task in two parts: part one, then a reply at 66 % of the window
(past the case's rotate level), and part two only when it is given a continuation, so the
with-arm finishes the task and the baseline does not.  The figures a user gets come from
their own run with a real model (docs/QUALITY.md); this proves the suite runs and scores.
"""

import json
import os
import shutil
import subprocess

from cc_continuity.rehearse import CONTINUATION, FAKE_API_KEY, MODEL, handoff_rule, usage_at
from cc_continuity.rehearse.scripted_model import ScriptedModel

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVALS = os.path.join(REPO, "evals")
CASES = sorted(d for d in os.listdir(EVALS) if os.path.isfile(os.path.join(EVALS, d, "case.yaml")))

USERS = 'def load_user(uid):\n    return {"id": uid}\n\n\nfetch_user = load_user\n'
API = 'from app.users import load_user\n\n\ndef get(uid):\n    return load_user(uid)\n'
CLI = 'from app.users import load_user\n\n\ndef main(uid):\n    print(load_user(uid))\n'
SLUG = ("import re\n\n\ndef slugify(s):\n    s = re.sub(r'[ _]+', '-', s.lower())\n"
        "    return re.sub(r'-+', '-', re.sub(r'[^a-z0-9-]', '', s))\n")
# case -> (a phrase of its prompt, part one, part two, the final reply); actions: (tool, path[, content])
PLAYS = {
    "alias-kept": ("rename fetch_user to load_user", [("Read", "app/users.py"), ("Write", "app/users.py", USERS)],
                   [("Read", "app/api.py"), ("Write", "app/api.py", API), ("Read", "app/cli.py"),
                    ("Write", "app/cli.py", CLI)], "Changed app/users.py, app/api.py and app/cli.py."),
    "changelog-once": ("Prepare release 1.4.0", [("Read", "CHANGELOG.md"), ("Write", "CHANGELOG.md",
                        "# Changelog\n\n## 1.4.0\n- faster parser\n- new --json flag\n\n## 1.3.0\n- older entry\n")],
                       [("Read", "pkg/__init__.py"), ("Write", "pkg/__init__.py", '__version__ = "1.4.0"\n'),
                        ("Write", "RELEASE_NOTES.md", "# 1.4.0\n- faster parser\n- new --json flag\n")],
                       "Release 1.4.0 is prepared."),
    "vendor-untouched": ("Implement slugify()", [("Read", "docs/SPEC.md"), ("Read", "text/slug.py")],
                         [("Read", "text/slug.py"), ("Write", "text/slug.py", SLUG)],
                         "slugify() follows the spec; vendor/translit.py is untouched."),
    "next-step": ("three steps at the end of docs/BRIEF.md", [("Read", "docs/BRIEF.md"), ("Write", "PLAN.md",
                   "- [x] 1 src/config.py\n- [x] 2 src/load.py\n- [ ] 3 tests/test_load.py\n"),
                   ("Write", "src/config.py", "DEFAULTS = {'debug': False}\n")],
                  [("Write", "src/load.py", "import json\n\nfrom src.config import DEFAULTS\n")],
                  "Steps 1 and 2 are done.\nNext step: add tests/test_load.py covering a missing key."),
    "todo-count": ("count the lines containing TODO", [("Read", "src/%s.py" % n) for n in "abcdef"],
                   [("Write", "REPORT.md", "a.py: 3\nb.py: 7\nc.py: 2\nd.py: 5\ne.py: 1\nf.py: 4\ntotal: 22\n")],
                   "b.py has the most TODOs (7)."),
}
# The workspace: the system prompt names it; after /clear, only the continuation does (no Environment block).
CWD = r"(?:Primary working directory:|The project is) (/\S+?)\.?(?:\s|$)"


def _steps(actions, pct):
    out = []
    for a in actions:
        tin = {"file_path": "{cwd}/" + a[1]}
        if a[0] == "Write":
            tin["content"] = a[2]
        out.append({"reply": [{"type": "tool_use", "name": a[0], "input": tin}], "usage": usage_at(pct)})
    return out


def scenario():
    rules = [handoff_rule()]
    for case, (phrase, one, two, final) in PLAYS.items():
        steps = _steps(two, 12) + [{"reply": final, "usage": usage_at(13)}]
        rules.append({"name": case + ":two", "when": {"last_user_contains": CONTINUATION, "any_text_contains": phrase},
                      "extract": {"cwd": CWD}, "extract_from": "any", "reply": steps[0]["reply"],
                      "usage": steps[0]["usage"], "then": steps[1:]})
    for case, (phrase, one, two, final) in PLAYS.items():
        # below the cases' rotate_tokens (40000: 20 % of 200k) while working, then past it
        steps = _steps(one, 12) + [{"reply": "Part one is done; the rest follows.", "usage": usage_at(66)}]
        rules.append({"name": case + ":one", "when": {"last_user_contains": phrase, "session_nth": 1},
                      "extract": {"cwd": CWD}, "extract_from": "any", "reply": steps[0]["reply"],
                      "usage": steps[0]["usage"], "then": steps[1:]})
    return {"rules": rules, "default": {"reply": "Noted."},
            "usage_plan": {"per": "session", "input_tokens": 10, "cache_read_input_tokens": {"start": 20000, "step": 500}}}


def run_eval(claude, tmp, model, *args):
    plugin = os.path.join(tmp, "plugin")
    shutil.copytree(os.path.join(REPO, "plugin"), plugin,
                    ignore=shutil.ignore_patterns("__pycache__", "results", ".mypy_cache"))
    home = os.path.join(tmp, "eval-home")
    os.makedirs(home)
    with open(os.path.join(home, ".claude.json"), "w") as f:
        json.dump({"hasCompletedOnboarding": True,
                   "customApiKeyResponses": {"approved": [FAKE_API_KEY[-20:]], "rejected": []}}, f)
    env = {"PATH": os.environ["PATH"], "HOME": home, "TERM": "dumb", "LANG": "C.UTF-8",
           "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": FAKE_API_KEY, "ANTHROPIC_MODEL": MODEL,
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
           "TMPDIR": tmp}  # (the eval runner's isolated homes, claude-eval-*, go with the test's folder)
    out = os.path.join(tmp, "result.json")
    p = subprocess.run([claude, "plugin", "eval", plugin, "--trust-plugin", "--scaffold", "--no-publish",
                        "--allow-tools", "Write", "Edit", "--runs", "1", "--output-dir", os.path.join(tmp, "out"),
                        *args, "--json", out], cwd=tmp, env=env, capture_output=True, text=True, timeout=1200,
                       stdin=subprocess.DEVNULL)
    assert os.path.exists(out), (p.returncode, p.stderr[-3000:])
    with open(out) as f:
        return p, json.load(f)


def test_every_case_loads_rotates_and_is_scored_in_both_arms(claude_bin, claude_bin_version, tmp_path):
    assert set(PLAYS) == set(CASES), "a case without a scripted play (or a play without its case)"
    with ScriptedModel(scenario(), log_path=tmp_path / "model.jsonl") as model:
        p, doc = run_eval(claude_bin, str(tmp_path), model)
        rules = [r.rule for r in model.requests(kind="main")]
    assert doc["claudeVersion"] == claude_bin_version and not doc["partial"]
    cases = {c["name"]: c for c in doc["cases"]}
    assert sorted(cases) == CASES, p.stderr[-2000:]
    report = {}
    for name, case in cases.items():
        [with_run] = case["arms"]["with"]
        [without_run] = case["arms"]["without"]
        graders = {g["name"]: g for g in with_run["graders"]}
        report[name] = (with_run["score"], without_run["score"])
        assert with_run["error"] is None, (name, with_run["error"])
        assert graders["rotated"]["passed"] and not graders["rotated"]["scored"], name  # with-only indicator
        assert all(g["passed"] for g in with_run["graders"]), (name, [(g["name"], g["explanation"])
                                                                     for g in with_run["graders"] if not g["passed"]])
        assert with_run["score"] == 1
        assert {g["name"] for g in without_run["graders"]} == set(graders) - {"rotated"}, name  # graded too
        assert rules.count(name + ":two") == 1 and rules.count(name + ":one") == 2, (name, rules)
    # The baseline never rotates, so it never gets part two: each case scores lower there.
    assert all(w > wo for w, wo in report.values()), report
    assert rules.count("handoff") == 3 * len(CASES)  # the model's Write of the handoff is refused by the runner
    print("\nper case (with, without):", report)
