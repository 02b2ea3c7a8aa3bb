"""Secret redaction: every corpus format is caught with its kind, ordinary text is left alone."""

import os
import runpy
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cc_continuity import redact

_DATA = runpy.run_path(os.path.join(os.path.dirname(__file__), "data", "secrets_corpus.py"))
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
