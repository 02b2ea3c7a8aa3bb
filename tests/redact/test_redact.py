"""Secret redaction: every corpus format is caught with its kind, ordinary text is left alone."""

import os
import runpy
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cc_continuity import redact
from cc_continuity.redact import rules
from helpers import TESTS

_DATA = runpy.run_path(os.path.join(TESTS, "data", "secrets_corpus.py"))
CORPUS = _DATA["CORPUS"]
INNOCENT = _DATA["INNOCENT"]
fake = _DATA["fake"]


def test_corpus_covers_at_least_thirty_formats_and_every_rule():
    kinds = {kind for kind, _, _ in CORPUS}
    assert len(CORPUS) >= 30
    assert len(kinds) >= 30
    assert kinds == set(redact.KINDS), "every rule needs a corpus entry, every entry a rule"


@pytest.mark.parametrize("kind,text,secret", CORPUS, ids=["%02d-%s" % (i, c[0]) for i, c in enumerate(CORPUS)])
def test_corpus_secret_is_found_with_its_kind_and_masked(kind, text, secret):
    found = redact.find_secrets(text)
    assert [k for k, _, _ in found] == [kind]
    _, start, end = found[0]
    at = text.index(secret)
    assert start <= at and at + len(secret) <= end, "the span must cover the whole secret"
    out = redact.redact(text)
    assert secret not in out
    # Exactly the span is replaced; the context (key names, URLs, prose) survives.
    assert out == text[:start] + "[REDACTED:%s]" % kind + text[end:]


@pytest.mark.parametrize("text", INNOCENT)
def test_ordinary_text_is_not_redacted(text):
    assert redact.find_secrets(text) == []
    assert redact.redact(text) == text


@pytest.mark.parametrize("kind,text,secret", CORPUS[::7])
def test_redaction_is_idempotent(kind, text, secret):
    once = redact.redact(text)
    assert redact.redact(once) == once
    assert redact.find_secrets(once) == []


def test_find_secrets_reports_positions_not_values():
    token = "ghp_" + fake(36)
    text = "a %s b" % token
    found = redact.find_secrets(text)
    assert found == [("github-pat", 2, 2 + len(token))]
    assert all(isinstance(x, (str, int)) and token not in str(x) for item in found for x in item)


def test_specific_provider_wins_over_generic_assignment():
    text = "GITHUB_TOKEN=ghp_%s\nANTHROPIC_API_KEY=sk-ant-api03-%s" % (fake(36), fake(90))
    assert [k for k, _, _ in redact.find_secrets(text)] == ["github-pat", "anthropic-api-key"]


def test_several_secrets_in_one_text_are_all_masked_in_order():
    aws = "AKIA" + fake(16, _DATA["UPPER_NUM"])
    gh = "ghp_" + fake(36)
    text = "deploy with %s then push using %s; db at mysql://root:Pw-123456@db/x" % (aws, gh)
    out = redact.redact(text)
    assert out == ("deploy with [REDACTED:aws-access-key-id] then push using [REDACTED:github-pat]; "
                   "db at mysql://root:[REDACTED:url-password]@db/x")


def test_truncated_private_key_is_masked_to_the_end():
    text = "oops:\n-----BEGIN RSA PRIVATE KEY-----\n" + fake(64, _DATA["B64"]) + "\n" + fake(30, _DATA["B64"])
    assert redact.redact(text) == "oops:\n[REDACTED:rsa-private-key]"


def test_overlapping_hits_merge_so_nothing_is_half_masked():
    # A URL password that is itself a provider token: one span, the provider's name.
    token = "ghp_" + fake(36)
    text = "https://x-access-token:%s@github.com/o/r.git" % token
    assert redact.redact(text) == "https://x-access-token:[REDACTED:github-pat]@github.com/o/r.git"


def test_empty_and_none():
    assert redact.redact("") == ""
    assert redact.redact(None) == ""
    assert redact.find_secrets("") == []
    assert redact.find_secrets(None) == []


def test_pathological_inputs_stay_linear():
    samples = ["a_" * 50000, "A" * 100000, "x" * 100000 + "=", "password" * 10000,
               "-----BEGIN PRIVATE KEY-----" + "A" * 100000, "eyJ" * 30000, "key: " * 20000]
    for s in samples:
        t = time.perf_counter()
        redact.find_secrets(s)
        assert time.perf_counter() - t < 3.0, s[:20]


_SECRETS = [secret for _, _, secret in CORPUS if "\n" not in secret and len(secret) < 200]
_PROSE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=_PROSE, after=_PROSE, secret=st.sampled_from(_SECRETS))
def test_a_known_secret_never_survives_any_surroundings(before, after, secret):
    # Key names are part of some formats (datadog, twilio auth token): embed the full corpus text.
    text = next(t for _, t, s in CORPUS if s == secret)
    out = redact.redact(before + "\n" + text + "\n" + after)
    assert secret not in out
    assert redact.redact(out) == out


# -- issue 10: forms it has never seen, and ordinary text ----------------------------------------
UNSEEN = _DATA["UNSEEN"]
HARMLESS = _DATA["HARMLESS"]


def test_the_unseen_forms_and_the_harmless_corpus_are_big_enough():
    assert len(UNSEEN) >= 60 and len({form for form, _, _ in UNSEEN}) == len(UNSEEN)
    assert len(HARMLESS) >= 90


@pytest.mark.parametrize("form,text,secret", UNSEEN, ids=[f for f, _, _ in UNSEEN])
def test_an_unseen_form_loses_its_secret(form, text, secret):
    out = redact.redact(text)
    assert secret not in out, out
    assert redact.redact(out) == out


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_text_is_left_alone(text):
    assert redact.find_secrets(text) == [], [(k, text[a:b]) for k, a, b in redact.find_secrets(text)]


# -- Hypothesis: the generic rules generalise (names, flags, userinfo, tokens) and ordinary text passes
_PREFIXES = ["db", "admin", "app", "root", "smtp", "redis", "service", "prod", "my", "backup", "ldap", "mq",
             "stripe", "internal", "svc", "vault", "ci", "new", "old", "user"]
_SECRET_WORDS = ["pass", "password", "passwd", "pwd", "pw", "passphrase", "secret", "token", "auth token",
                 "api key", "access key", "private key", "client secret", "credentials", "signing key",
                 "secret key", "refresh token", "access token"]
_PW_CHARS = st.sampled_from("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!%&*+-=?^_~")


def _styled(words, style):
    if style == "UPPER_SNAKE":
        return "_".join(w.upper() for w in words)
    if style == "snake":
        return "_".join(words)
    if style == "kebab":
        return "-".join(words)
    if style == "dotted":
        return ".".join(words)
    return words[0] + "".join(w.capitalize() for w in words[1:])  # camelCase


@st.composite
def secret_names(draw):
    words = []
    if draw(st.booleans()):
        words.append(draw(st.sampled_from(_PREFIXES)))
    words += draw(st.sampled_from(_SECRET_WORDS)).split()
    style = draw(st.sampled_from(["UPPER_SNAKE", "snake", "kebab", "dotted", "camel"]))
    return _styled(words, style)


@st.composite
def passwords(draw):
    """What people use: 8-40 characters, a letter first, a digit somewhere, maybe symbols.

    (Digits alone are left out on purpose: the redactor takes a number for a count, a
    size or a port, never for a PIN -- see _plausible_value.)
    """
    body = draw(st.text(_PW_CHARS, min_size=6, max_size=38))
    first = draw(st.sampled_from("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"))
    digit = draw(st.sampled_from("23456789"))
    at = draw(st.integers(0, len(body)))
    return first + body[:at] + digit + body[at:]


_CONTEXT = st.sampled_from(["", "# config\n", "see below\n", "export ", "  ", "env:\n  ", "- "])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=secret_names(), op=st.sampled_from(["=", ": ", " = ", "=>", ":=", ":"]),
       quote=st.sampled_from(["", '"', "'"]), value=passwords(), before=_CONTEXT,
       after=st.sampled_from(["", "\n", "\nnext line\n", " # comment"]))
def test_any_assignment_whose_name_says_secret_loses_its_value(name, op, quote, value, before, after):
    text = "%s%s%s%s%s%s%s" % (before, name, op, quote, value, quote, after)
    out = redact.redact(text)
    assert value not in out, (text, out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.sampled_from(_SECRET_WORDS), prefix=st.sampled_from(["", "db ", "admin ", "api "]),
       sep=st.sampled_from(["=", " "]), value=passwords(),
       cmd=st.sampled_from(["tool", "deploy.sh", "python manage.py login", "./run"]))
def test_any_flag_whose_name_says_secret_loses_its_value(words, prefix, sep, value, cmd):
    flag = "--" + "-".join((prefix + words).split())
    text = "%s %s%s%s --verbose" % (cmd, flag, sep, value)
    out = redact.redact(text)
    assert value not in out, (text, out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(user=st.sampled_from(["alice", "app", "root", "svc-ci", "deploy_bot", "u1"]), value=passwords(),
       scheme=st.sampled_from(["", "postgres://", "redis://", "amqp://", "https://", "mongodb+srv://"]),
       host=st.sampled_from(["db.internal", "10.0.0.7", "cache", "mq.example.com:5672", "localhost"]))
def test_credentials_in_any_userinfo_lose_the_password(user, value, scheme, host):
    value = value.replace("@", "").replace("/", "").replace(":", "") or "Pw9!x"
    text = "connect %s%s:%s@%s/app" % (scheme, user, value, host)
    out = redact.redact(text)
    assert value not in out, (text, out)


_B62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lead=st.sampled_from(["the API token is", "token", "my secret key:", "use this api key", "credentials",
                             "password for staging is", "auth"]),
       n=st.integers(24, 64), rnd=st.randoms(use_true_random=True))
def test_a_random_token_right_after_a_secret_word_is_masked(lead, n, rnd):
    token = "Q7" + "".join(rnd.choice(_B62) for _ in range(n)) + "z3"  # machine-made: random, both cases, a digit
    text = "%s %s" % (lead, token)
    out = redact.redact(text)
    assert token not in out, (text, out)


_HEX = "0123456789abcdef"
_SEGMENT = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz_-"), min_size=1, max_size=10).filter(
    lambda s: s[0].isalpha())


@st.composite
def ordinary_strings(draw):
    """A SHA, a short SHA, a UUID, a version, a path, a digest or a numeric setting."""
    kind = draw(st.sampled_from(["sha", "short", "uuid", "version", "path", "digest", "number", "time"]))
    if kind in ("sha", "short", "digest"):
        n = {"sha": draw(st.sampled_from([40, 64])), "short": draw(st.integers(7, 12)), "digest": 64}[kind]
        h = "".join(draw(st.lists(st.sampled_from(_HEX), min_size=n, max_size=n)))
        return "sha256:" + h if kind == "digest" else h
    if kind == "uuid":
        h = "".join(draw(st.lists(st.sampled_from(_HEX), min_size=32, max_size=32)))
        return "%s-%s-4%s-a%s-%s" % (h[:8], h[8:12], h[13:16], h[17:20], h[20:32])
    if kind == "version":
        parts = draw(st.lists(st.integers(0, 2030), min_size=2, max_size=4))
        pre = draw(st.sampled_from(["", "-rc.1", "-beta.2", "+build.7", ".dev3"]))
        return draw(st.sampled_from(["", "v"])) + ".".join(map(str, parts)) + pre
    if kind == "path":
        segs = draw(st.lists(_SEGMENT, min_size=1, max_size=5))
        ext = draw(st.sampled_from([".py", ".json", ".md", ".pem", ".key", "", ".jsonl"]))
        return draw(st.sampled_from(["/", "~/", "./", "src/", "C:\\\\"])) + "/".join(segs) + ext
    if kind == "time":
        return "%04d-%02d-%02dT%02d:%02d:%02dZ" % tuple(draw(st.integers(lo, hi)) for lo, hi in
                                                      ((2000, 2030), (1, 12), (1, 28), (0, 23), (0, 59), (0, 59)))
    return str(draw(st.integers(0, 10 ** 7)))


_ABOUT_SECRETS = [
    "fixed the token refresh in {x}", "password reset flow moved to {x}", "rotated the api key (ticket {x})",
    "secret scanning found nothing at {x}", "token_count={x}", "max_tokens: {x}", "session {x} resumed",
    "the key file is {x}", "auth library {x}", "credentials live in {x}", "PASSWORD_FILE={x}",
    "see {x} for the token format", "bearer of {x}", "commit {x}: drop the plaintext password fallback",
    "request_id={x} token_id={x}", "password_min_length = {x}", "{x} (secret_version {x})",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=st.sampled_from(_ABOUT_SECRETS), value=ordinary_strings())
def test_ordinary_strings_next_to_secret_words_are_left_alone(template, value):
    text = template.format(x=value)
    assert redact.find_secrets(text) == [], (text, redact.redact(text))


def test_a_rule_is_compiled_only_when_a_text_holds_its_literals():
    """Compiling the whole table at import cost 20-45 ms in each process that redacts (the verifying Stop,
    the claim); a rule with literals is compiled the first time a text holds one of them."""
    code = ("from cc_continuity.redact import rules, redact\n"
            "print(sum(r._regex is not None for r in rules._RULES))\n"
            "redact('plain words and nothing else')\n"
            "print(sum(r._regex is not None for r in rules._RULES))\n"
            "redact('token ghp_' + 'a1B2' * 9)\n"
            "print(sum(r._regex is not None for r in rules._RULES), len(rules._RULES))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    at_import, plain, after_ghp, table = map(int, out)
    without_literals = sum(1 for r in rules._RULES if not r.needles)
    assert at_import == 0 and plain == without_literals and plain < after_ghp < table // 2, out
