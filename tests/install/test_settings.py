"""settings.json merge/unmerge: property tests over generated user documents.

The documents hold other tools' hooks, unknown keys and a status line, and are
written in assorted styles.  The properties are the installer's promises:
install then uninstall gives back the same bytes when nobody else wrote in
between and the same JSON value when someone did; installing twice is the same
as once; invalid JSON is refused.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from cc_continuity.install import settings as S

PY = "/opt/python/bin/python3.11"
APP = "/home/u/.claude-continuity/app"
OUR_EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "PreCompact", "SessionEnd",
              "StopFailure", "Notification"]
EVENTS = OUR_EVENTS + ["SubagentStop", "PermissionRequest"]


def rendered(python=PY, app=APP):
    return S.render_fragment(S.load_fragment(), python, app)


def canon(doc):
    """A JSON value as text: key order ignored, but true/1 and 1/1.0 kept apart."""
    return json.dumps(S.plain(doc), sort_keys=True)


# -- strategies ----------------------------------------------------------------

json_leaf = (st.none() | st.booleans() | st.integers(-10**9, 10**9)
             | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
their_handler = st.fixed_dictionaries(
    {"type": st.just("command"),
     "command": st.sampled_from(["/usr/local/bin/other-hook", "npx -y lint-hook", "~/.bin/notify.sh", "echo é"])},
    optional={"timeout": st.integers(1, 600), "args": st.lists(st.text(max_size=6), max_size=2),
              "statusMessage": st.text(max_size=6)})
their_group = st.fixed_dictionaries({"hooks": st.lists(their_handler, max_size=3)},
                                    optional={"matcher": st.text(max_size=8)})
their_hooks = st.dictionaries(st.sampled_from(EVENTS), st.lists(their_group, max_size=3), max_size=5)
their_status = st.fixed_dictionaries(
    {"type": st.just("command"), "command": st.sampled_from(["~/.claude/statusline.sh", "echo hi", "ccline --theme x"])},
    optional={"padding": st.integers(0, 3), "refreshInterval": st.integers(1, 30)})
other_key = st.text(min_size=1, max_size=10).filter(lambda k: k not in ("hooks", "statusLine"))


@st.composite
def user_docs(draw):
    pairs = list(draw(st.dictionaries(other_key, json_value, max_size=5)).items())
    if draw(st.booleans()):
        pairs.append(("hooks", draw(their_hooks)))
    if draw(st.booleans()):
        pairs.append(("statusLine", draw(their_status)))
    order = draw(st.permutations(range(len(pairs))))
    return {pairs[i][0]: pairs[i][1] for i in order}


styles = st.fixed_dictionaries({"indent": st.sampled_from([None, 2, 4, "\t"]), "ascii": st.booleans(),
                                "newline": st.booleans()})


def write(doc, style):
    text = json.dumps(doc, indent=style["indent"], ensure_ascii=style["ascii"])
    return (text + ("\n" if style["newline"] else "")).encode("utf-8")


@st.composite
def originals(draw):
    """File bytes as a user might have them, or None for no file."""
    kind = draw(st.sampled_from(["doc", "doc", "doc", "absent", "blank"]))
    if kind == "absent":
        return None
    if kind == "blank":
        return draw(st.sampled_from([b"", b"\n", b"  \n\t"]))
    return write(draw(user_docs()), draw(styles))


# Other writers touching the file between install and uninstall.
writer_ops = st.lists(st.one_of(
    st.tuples(st.just("set"), other_key, json_value),
    st.tuples(st.just("group"), st.sampled_from(EVENTS), their_group),
    st.tuples(st.just("statusline"), their_status),
    st.tuples(st.just("drop"), other_key),
), max_size=4)


def apply_ops(doc, ops):
    doc = json.loads(json.dumps(S.plain(doc)))
    for op in ops:
        if op[0] == "set":
            doc[op[1]] = op[2]
        elif op[0] == "group":
            doc.setdefault("hooks", {}).setdefault(op[1], []).append(op[2])
        elif op[0] == "statusline":
            doc["statusLine"] = op[1]
        elif op[0] == "drop":
            doc.pop(op[1], None)
    return doc


PROPS = hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- properties ----------------------------------------------------------------

@PROPS
@given(original=originals())
def test_install_then_uninstall_gives_back_the_same_bytes(original):
    new, record = S.plan_install(original, rendered())
    assert S.plan_uninstall(new, json.loads(json.dumps(record))) == original


@PROPS
@given(original=originals(), style=styles)
def test_install_twice_is_install_once(original, style):
    once, record = S.plan_install(original, rendered())
    twice, record2 = S.plan_install(once, rendered(), record)
    assert twice == once
    assert record2 == record
    # ...and still uninstalls to the original bytes.
    assert S.plan_uninstall(twice, record2) == original


@PROPS
@given(original=originals(), ops=writer_ops, style=styles)
def test_uninstall_after_another_writer_gives_their_changes_without_ours(original, ops, style):
    new, record = S.plan_install(original, rendered())
    installed = S.parse(new.decode())
    touched = write(apply_ops(installed, ops), style)  # another tool rewrote the file its own way
    left = S.plan_uninstall(touched, record)
    before = {} if original is None or not original.strip() else json.loads(original)
    expected = apply_ops(before, ops)
    if left is None:
        assert expected == {} and original is None
    else:
        assert canon(S.parse(left.decode())) == canon(expected)


@PROPS
@given(doc=user_docs(), style=styles)
def test_merge_keeps_every_other_key_and_group_in_order(doc, style):
    new, _ = S.plan_install(write(doc, style), rendered())
    merged = S.parse(new.decode())
    assert [k for k in merged if k not in ("hooks", "statusLine")] == [k for k in doc if k not in ("hooks", "statusLine")]
    for key in doc:
        if key not in ("hooks", "statusLine"):
            assert canon(merged[key]) == canon(doc[key])
    theirs = doc.get("hooks", {})
    for event, groups in merged["hooks"].items():
        ours = [g for g in groups if all(S.is_our_handler(h) for h in g["hooks"]) and g["hooks"]]
        if event in OUR_EVENTS:
            assert len(ours) == 1, "exactly one group of ours per event"
        others = [g for g in groups if g not in ours]
        assert canon(others) == canon(theirs.get(event, []))
    assert list(merged["hooks"])[:len(theirs)] == list(theirs), "their events keep their order"
    assert S.is_our_statusline(merged["statusLine"])


@PROPS
@given(junk=st.sampled_from([b"{", b'{"a": 1,}', b"// comment\n{}", b"[1, 2]", b'"text"', b"{'a': 1}",
                             b'{"a": NaN}', b'{"a": 1, "a": 2}', b"\xef\xbb\xbf{}", b"\xff\xfe{}", b"null"]))
def test_invalid_json_is_refused(junk):
    with pytest.raises(S.SettingsError):
        S.plan_install(junk, rendered())


# -- examples ------------------------------------------------------------------

def test_parse_error_names_line_and_column():
    with pytest.raises(S.SettingsError) as e:
        S.parse('{\n  "a": 1,\n  "b": tru\n}\n', "/x/settings.json")
    msg = str(e.value)
    assert "/x/settings.json" in msg and "line 3 column" in msg


def test_duplicate_keys_are_refused_because_merging_would_drop_one():
    with pytest.raises(S.SettingsError, match='duplicate key "hooks"'):
        S.parse('{"hooks": {}, "hooks": {"Stop": []}}')


def test_hooks_of_the_wrong_type_are_refused():
    with pytest.raises(S.SettingsError, match='"hooks" is not a JSON object'):
        S.plan_install(b'{"hooks": []}', rendered())
    with pytest.raises(S.SettingsError, match='"hooks.Stop" is not a JSON array'):
        S.plan_install(b'{"hooks": {"Stop": {}}}', rendered())


def test_fragment_matches_the_contract():
    r = rendered()
    assert list(r["hooks"]) == OUR_EVENTS
    timeouts = {e: g[0]["hooks"][0]["timeout"] for e, g in r["hooks"].items()}
    assert timeouts == {"SessionStart": 15, "UserPromptSubmit": 10, "PreToolUse": 5, "PostToolUse": 5,
                        "PostToolUseFailure": 5,
                        "Stop": 60, "PreCompact": 30, "SessionEnd": 10, "StopFailure": 5, "Notification": 5}
    assert r["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    for event, (group,) in r["hooks"].items():
        h = group["hooks"][0]
        assert h["type"] == "command" and h["command"] == PY
        assert h["args"] == ["-S", "-c", S.boot_code(APP), event]
        assert S.app_of_handler(h) == APP
        assert not h.get("async")  # the gate of each event is synchronous
    # Stop has a second handler: the late look, async, allowed to wake the model (asyncRewake).
    assert [len(g[0]["hooks"]) for g in r["hooks"].values()] == [1, 1, 1, 1, 1, 2, 1, 1, 1, 1]
    # Notification: only the usage-limit news the watchdog forwards (an exact-name matcher).
    assert r["hooks"]["Notification"][0]["matcher"] == \
        "quota_auto_resume_fired|quota_auto_resume_stale|quota_auto_resume_disabled"
    late = r["hooks"]["Stop"][0]["hooks"][1]
    assert late["args"] == ["-S", "-c", S.boot_code(APP), "StopLate"]
    assert late["async"] is True and late["asyncRewake"] is True and late["timeout"] == 60
    assert r["statusLine"] == {"type": "command", "command": PY + " -S " + APP + "/cc_continuity/statusmain.py",
                               "padding": 0, "refreshInterval": 10}


def test_status_line_with_awkward_paths_is_quoted_for_the_shell():
    import shlex

    r = rendered("/opt/my python/bin/python3", "/home/o'neil/cc home/app")
    assert shlex.split(r["statusLine"]["command"]) == [
        "/opt/my python/bin/python3", "-S", "/home/o'neil/cc home/app/cc_continuity/statusmain.py"]
    # exec form needs no shell quoting: the path survives as a Python literal in the bootstrap
    assert S.app_of_handler(r["hooks"]["Stop"][0]["hooks"][0]) == "/home/o'neil/cc home/app"


def test_upgrade_replaces_ours_in_place_and_keeps_neighbours():
    theirs_before = {"hooks": [{"type": "command", "command": "before"}]}
    theirs_after = {"hooks": [{"type": "command", "command": "after"}]}
    old = rendered("/old/python", "/old/app")
    doc = {"hooks": {"Stop": [theirs_before, old["hooks"]["Stop"][0], theirs_after]}, "statusLine": old["statusLine"]}
    new, _ = S.plan_install(S.dumps(doc).encode(), rendered())
    stop = S.parse(new.decode())["hooks"]["Stop"]
    assert stop[0] == theirs_before and stop[2] == theirs_after and len(stop) == 3
    assert stop[1]["hooks"][0]["command"] == PY
    assert "/old/" not in new.decode()


def test_stray_copies_of_ours_are_collapsed_and_mixed_groups_keep_theirs():
    ours = rendered()["hooks"]["Stop"][0]
    mixed = {"matcher": "x", "hooks": [{"type": "command", "command": "theirs"}, ours["hooks"][0]]}
    doc = {"hooks": {"Stop": [ours, mixed, ours]}}
    merged = S.merge(doc, rendered())
    assert merged["hooks"]["Stop"] == [ours, {"matcher": "x", "hooks": [{"type": "command", "command": "theirs"}]}]
    assert S.unmerge(merged, None)["hooks"]["Stop"] == [
        {"matcher": "x", "hooks": [{"type": "command", "command": "theirs"}]}]


def test_status_line_is_chained_and_restored():
    theirs = {"type": "command", "command": "~/bin/sl.sh", "refreshInterval": 5}
    original = S.dumps({"statusLine": theirs, "model": "x"}).encode()
    new, record = S.plan_install(original, rendered())
    assert record["statusline_chain"] == theirs and record["statusline_had_key"] is True
    # a re-install sees our own status line and must not chain to itself
    _, record2 = S.plan_install(new, rendered(), record)
    assert record2["statusline_chain"] == theirs
    # without the record (state dir deleted, another CC_CONTINUITY_HOME): ours carries theirs
    _, lost = S.plan_install(new, rendered(), None)
    assert lost["statusline_chain"] == theirs and lost["statusline_had_key"] is True
    # uninstall after someone reformatted the file: theirs comes back, in place
    reformatted = S.dumps(S.parse(new.decode()), indent=4).encode()
    back = S.parse(S.plan_uninstall(reformatted, record).decode())
    assert list(back) == ["statusLine", "model"] and back["statusLine"] == theirs


def test_ours_refreshes_on_a_timer_and_a_faster_timer_of_theirs_is_kept():
    assert S.plan_install(b"{}", rendered())[0] and S.parse(S.plan_install(b"{}", rendered())[0].decode())[
        "statusLine"]["refreshInterval"] == 10
    for theirs, expected in ((None, 10), (3, 3), (30, 10), ("2", 10), (0, 10)):
        mine = {"type": "command", "command": "~/bin/sl.sh"}
        if theirs is not None:
            mine["refreshInterval"] = theirs
        new, _ = S.plan_install(S.dumps({"statusLine": mine}).encode(), rendered())
        assert S.parse(new.decode())["statusLine"]["refreshInterval"] == expected, theirs
        assert S.embedded_chain(S.parse(new.decode())["statusLine"]) == mine  # carried exactly, for uninstall


def test_uninstall_keeps_a_status_line_the_user_set_after_install():
    new, record = S.plan_install(b"{}", rendered())
    doc = S.parse(new.decode())
    doc["statusLine"] = {"type": "command", "command": "mine-now"}
    left = S.parse(S.plan_uninstall(S.dumps(doc).encode(), record).decode())
    assert left == {"statusLine": {"type": "command", "command": "mine-now"}}


def test_created_containers_are_dropped_but_pre_existing_empty_ones_stay():
    new, record = S.plan_install(b'{"hooks": {"Stop": []}}', rendered())
    assert record["created_hooks_key"] is False and "Stop" not in record["created_events"]
    doc = S.parse(new.decode())
    doc["theirs"] = 1  # make the exact-bytes path impossible
    assert S.parse(S.plan_uninstall(S.dumps(doc).encode(), record).decode()) == {"hooks": {"Stop": []}, "theirs": 1}


def test_file_we_created_is_deleted_when_nothing_else_is_in_it():
    new, record = S.plan_install(None, rendered())
    assert S.plan_uninstall(new, record) is None
    reindented = S.dumps(S.parse(new.decode()), indent=8).encode()
    assert S.plan_uninstall(reindented, record) is None
    doc = S.parse(new.decode())
    doc["model"] = "opus"
    assert S.parse(S.plan_uninstall(S.dumps(doc).encode(), record).decode()) == {"model": "opus"}


def test_indent_and_unicode_are_kept():
    original = '{\n    "a": "café",\n    "b": [1]\n}\n'.encode()
    new, _ = S.plan_install(original, rendered())
    text = new.decode()
    assert '\n    "a": "café",' in text and text.endswith("}\n")
    tabbed, _ = S.plan_install(b'{\n\t"a": 1\n}', rendered())
    assert b'\n\t"a": 1,' in tabbed


def test_without_a_record_uninstall_still_removes_everything_of_ours():
    original = S.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "t"}]}]}}).encode()
    new, _ = S.plan_install(original, rendered())
    left = S.plan_uninstall(new, None)
    assert S.parse(left.decode()) == S.parse(original.decode())
    assert not S.has_ours(S.parse(left.decode()))


# -- issue 10: values we do not own come back exactly (numbers as written, lone surrogates) ---------
_NUMBERS = st.sampled_from([
    "1e400", "-1e400", "1E+999", "-0", "-0.0", "0e0", "1.10", "1.0", "1E5", "2.5E-3", "5e-324", "1e-400",
    "12345678901234567890123456789", "-98765432109876543210", "0.30000000000000004", "9007199254740993",
]) | st.integers().map(str) | st.floats(allow_nan=False, allow_infinity=False).map(repr)
_STRINGS = st.sampled_from(['"\\ud800"', '"x\\udfffy"', '"\\u00e9"', '"\\/path"', '"\\u2028"', '"tab\\t\\"q\\""',
                            '"\\ud83d\\ude00"', '"\\u0000"']) | st.text(max_size=8).map(json.dumps)
_LEAVES = _NUMBERS | _STRINGS | st.sampled_from(["true", "false", "null"])


def _obj(pairs):
    return "{" + ", ".join("%s: %s" % (json.dumps(k), v) for k, v in pairs) + "}"


_VALUES = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]")
                       | st.lists(st.tuples(st.text(max_size=5), inner), max_size=3, unique_by=lambda kv: kv[0]).map(_obj),
                       max_leaves=8)


@st.composite
def exotic_files(draw):
    """settings.json text with numbers and strings that a float/str round trip would change."""
    keys = draw(st.lists(other_key, max_size=5, unique=True))
    pairs = [(k, draw(_VALUES)) for k in keys]
    if draw(st.booleans()):
        status = _obj([("type", '"command"'), ("command", '"echo THEIRS"'), ("padding", draw(_NUMBERS)),
                       ("label", draw(_STRINGS))])
        pairs.insert(draw(st.integers(0, len(pairs))), ("statusLine", status))
    if draw(st.booleans()):
        group = _obj([("hooks", "[%s]" % _obj([("type", '"command"'), ("command", '"/bin/true"'),
                                               ("timeout", draw(_NUMBERS))]))])
        pairs.append(("hooks", _obj([("Stop", "[%s]" % group)])))
    return _obj(pairs).encode("utf-8")


def _strict_json(data):
    """What a standard strict parser (Claude Code's) accepts: no NaN/Infinity, UTF-8."""
    def refuse(name):
        raise ValueError("%s is not JSON" % name)
    return json.loads(data.decode("utf-8"), parse_constant=refuse)


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(original=exotic_files(), indent=st.sampled_from([2, 4, "\t"]))
def test_values_we_do_not_own_round_trip_exactly(original, indent):
    before = S.parse(original.decode())
    new, record = S.plan_install(original, rendered())
    _strict_json(new)  # never Infinity, never an unencodable surrogate
    after = S.parse(new.decode())
    for key, value in before.items():
        if key == "statusLine":
            assert S.embedded_chain(after["statusLine"]) == value  # carried exactly, padding and all
        elif key == "hooks":
            assert after["hooks"]["Stop"][0] == value["Stop"][0]  # theirs first, exact
        else:
            assert after[key] == value and S.dumps(after[key]) == S.dumps(value), key
    # The install record survives its own JSON file; uninstall gives back the very bytes.
    record = json.loads(json.dumps(record))
    assert S.plan_uninstall(new, record) == original
    # Someone reformats the file: uninstall still gives back every value exactly.
    reformatted = S.dumps(after, indent).encode()
    left = S.plan_uninstall(reformatted, record)
    assert S.dumps(S.parse(left.decode())) == S.dumps(before)
    # ... and installing again over the result changes nothing more.
    again, _ = S.plan_install(new, rendered(), record)
    assert again == new


def test_1e400_is_kept_not_written_as_infinity():
    new, record = S.plan_install(b'{"x": 1e400, "y": -0, "z": 123456789012345678901234567890}', rendered())
    text = new.decode()
    assert '"x": 1e400' in text and '"y": -0,' in text and "123456789012345678901234567890" in text
    assert "Infinity" not in text
    twice, _ = S.plan_install(new, rendered(), record)
    assert twice == new


# -- permission rules (the MCP server's read-only tools) ----------------------------------------------------------

ALLOW = ["mcp__cc-continuity__session_context", "mcp__cc-continuity__list_effects"]


@PROPS
@given(original=originals())
def test_allow_rules_are_added_once_and_taken_out_exactly(original):
    new, record = S.plan_install(original, dict(rendered(), allow=ALLOW))
    doc = S.parse(new.decode())
    assert [r for r in doc["permissions"]["allow"] if r in ALLOW] == ALLOW
    again, record2 = S.plan_install(new, dict(rendered(), allow=ALLOW), json.loads(json.dumps(record)))
    assert again == new and record2 == record
    assert S.plan_uninstall(new, json.loads(json.dumps(record))) == original


def test_a_rule_the_user_had_stays_and_turning_the_server_off_takes_out_only_ours():
    original = json.dumps({"permissions": {"allow": ["Bash(ls:*)", ALLOW[0]], "deny": ["Read(.env)"]}}).encode()
    on, rec = S.plan_install(original, dict(rendered(), allow=ALLOW))
    assert S.parse(on.decode())["permissions"]["allow"] == ["Bash(ls:*)", ALLOW[0], ALLOW[1]]
    assert rec["allow_added"] == [ALLOW[1]] and not rec["created_permissions_key"]
    off, _ = S.plan_install(on, rendered(), json.loads(json.dumps(rec)))
    assert S.parse(off.decode())["permissions"] == {"allow": ["Bash(ls:*)", ALLOW[0]], "deny": ["Read(.env)"]}
    edited = json.dumps(dict(S.plain(S.parse(on.decode())), model="opus")).encode()  # someone wrote since
    back = S.parse(S.plan_uninstall(edited, json.loads(json.dumps(rec))).decode())
    assert back["permissions"]["allow"] == ["Bash(ls:*)", ALLOW[0]] and back["model"] == "opus"


def test_without_a_record_uninstall_takes_out_the_rules_it_would_add():
    on, _ = S.plan_install(None, dict(rendered(), allow=ALLOW))
    edited = json.dumps(dict(S.plain(S.parse(on.decode())), model="opus")).encode()
    back = S.parse(S.plan_uninstall(edited, None, allow=ALLOW).decode())
    assert "permissions" not in back and back["model"] == "opus"


def test_permissions_of_the_wrong_type_are_refused():
    with pytest.raises(S.SettingsError, match="permissions.allow"):
        S.plan_install(json.dumps({"permissions": {"allow": "all"}}).encode(), dict(rendered(), allow=ALLOW))
