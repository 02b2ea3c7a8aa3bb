"""Issue 22: redaction holds on forms it was not written for (tests/data/unseen_corpus.py).

The bar: at least 100 forms from at least 20 vendors, >= 90 % caught (no 8-character piece
of any secret survives), and not one finding in >= 500 ordinary lines.  The figures are in
/work/notes/issue-22.md; a form that leaks is listed by the failing assertion.
"""

import os
import re
import runpy

from cc_continuity import redact
from helpers import TESTS
from helpers.redaction import leaked

_DATA = runpy.run_path(os.path.join(TESTS, "data", "unseen_corpus.py"))
SECRETS, BENIGN = _DATA["SECRETS"], _DATA["BENIGN"]
_MARK = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")


def test_the_corpus_is_big_enough():
    assert len(SECRETS) >= 100
    assert len({vendor for vendor, _, _ in SECRETS}) >= 20
    assert len(BENIGN) >= 500
    assert all(secrets and all(len(s) >= 8 for s in secrets) for _, _, secrets in SECRETS)


def test_at_least_ninety_percent_of_unseen_forms_are_caught():
    leaks = [(vendor, line) for vendor, line, secrets in SECRETS if leaked(line, secrets)]
    caught = len(SECRETS) - len(leaks)
    assert caught >= 0.9 * len(SECRETS), (caught, len(SECRETS), leaks)


def test_no_ordinary_line_is_touched():
    found = [(line, redact.find_secrets(line)) for line in BENIGN if redact.find_secrets(line)]
    assert found == []


def test_encoded_and_wrapped_secrets():
    import base64

    env = base64.b64encode(b"DB_PASSWORD=Plum-Tree-4471").decode()
    assert redact.redact("config: %s" % env) == "config: [REDACTED:base64-secret]"
    assert redact.redact("echo SGVsbG8sIHdvcmxkIQ== | base64 -d") == "echo SGVsbG8sIHdvcmxkIQ== | base64 -d"
    out = redact.redact("curl -d 'user=a&password=p%40ss%20w0rd%26x' https://e.example")
    assert "p%40ss" not in out and "w0rd" not in out and "user=a" in out
    text = "api_key: kHMD910CZUVPb2TzyObF\n  p1u46mmhsFWabodzDj5e\nnext: line"
    out = redact.redact(text)
    assert "kHMD910C" not in out and "p1u46mmh" not in out and out.endswith("\nnext: line")


def test_a_whole_quoted_value_is_masked_never_half():
    for line, secret in (("sshpass -p 'c0rrect horse battery' ssh h", "c0rrect horse battery"),
                         ("mysql -u root -p'Tr0ub4dor&3 x' shop", "Tr0ub4dor&3 x"),
                         ("DB_PASSWORD='my long pass phrase 2024'", "my long pass phrase 2024"),
                         ("password = 'Zq8v(T2k)Lm9'", "Zq8v(T2k)Lm9")):
        out = _MARK.sub("", redact.redact(line))
        assert not any(w in out for w in secret.split() if len(w) > 2), out


# -- the PostToolUse action record: mask over the whole first line, then a cut that leaves no quote open --
def test_action_targets_never_keep_a_piece_of_a_secret():
    from cc_continuity.ledger import TARGET_MAX, target

    secret = "c0rrect horse battery staple"
    for pad in range(150, 260, 7):  # the cut lands before, inside and after the quoted value
        for cmd in ("echo %s; DB_PASSWORD='%s' ./run.sh" % ("x" * pad, secret),
                    "echo %s && sshpass -p '%s' ssh deploy@h" % ("x" * pad, secret),
                    "echo %s; mysql -u root -p'%s' shop" % ("x" * pad, secret)):
            t = target({"command": cmd})
            assert len(t) <= TARGET_MAX
            out = redact.redact(t)  # as the successor's bootstrap quotes it
            assert not any(w in out for w in secret.split()), (pad, cmd, t)
    t = target({"command": 'curl -H "Authorization: Bearer abcdefghij0123456789" https://x'})
    assert "abcdefghij" not in t
