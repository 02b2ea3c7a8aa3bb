"""cc_continuity.tmux against a real private tmux server running the fake Claude Code prompt."""

import os
import signal
import time

import pytest

from cc_continuity.tmux import Pane, TmuxError, literal_text, tmux_name

pytestmark = pytest.mark.skipif(not __import__("shutil").which("tmux"), reason="needs tmux")

RULE = "─" * 40


def screen(*lines):
    return "\n".join(lines)


# -- locating the pane -------------------------------------------------------


def test_from_env_parses_tmux_and_tmux_pane():
    pane = Pane.from_env({"TMUX": "/tmp/tmux-1000/de,fault,4242,0", "TMUX_PANE": "%7",
                          "PATH": os.environ["PATH"]})
    assert (pane.socket_path, pane.pane_id) == ("/tmp/tmux-1000/de,fault", "%7")


@pytest.mark.parametrize("env", [
    {},
    {"TMUX": "/tmp/sock,1,0"},                       # no TMUX_PANE
    {"TMUX_PANE": "%1"},                             # no TMUX
    {"TMUX": "/tmp/sock", "TMUX_PANE": "%1"},        # not the triple
    {"TMUX": "/tmp/sock,1,0", "TMUX_PANE": "1"},     # not a pane id
    {"TMUX": ",1,0", "TMUX_PANE": "%1"},             # no socket
])
def test_from_env_is_none_outside_tmux(env):
    env.setdefault("PATH", os.environ["PATH"])
    assert Pane.from_env(env) is None


def test_from_env_is_none_without_tmux_binary(tmp_path):
    assert Pane.from_env({"TMUX": "/tmp/sock,1,0", "TMUX_PANE": "%1", "PATH": str(tmp_path)}) is None


def test_constructor_rejects_bad_pane_ids():
    for bad in ("3", "%", "%3;kill-server", "", None):
        with pytest.raises(ValueError):
            Pane("/tmp/sock", bad)


# -- reading the screen (pure) -------------------------------------------------


def test_is_idle_and_input_text_on_drawn_screens():
    idle = screen("❯ an old prompt echoed in the history", "", RULE, "❯ typed so far", RULE,
                  "  ? for shortcuts")
    assert Pane.is_idle(idle)
    assert Pane.input_text(idle) == "typed so far"

    footer_busy = idle.replace("? for shortcuts", "(running Stop hook · 2s) esc to interrupt")
    assert not Pane.is_idle(footer_busy)
    spinner_busy = screen("✻ Working… (3s · esc to interrupt)", "", RULE, "❯ ", RULE, "")
    assert not Pane.is_idle(spinner_busy)
    assert Pane.input_text(spinner_busy) == ""

    # The phrase far up in the conversation is not the status area.
    talk = ["the docs say: esc to interrupt"] + ["line %d" % i for i in range(10)]
    assert Pane.is_idle(screen(*talk, RULE, "❯ ", RULE, "  ? for shortcuts"))

    # No rule right above the prompt: no input box (e.g. a dialog or the shell).
    assert not Pane.is_idle(screen("Do you want to proceed?", "❯ 1. Yes", "  2. No"))
    assert Pane.input_text(screen("❯ 1. Yes")) == ""

    wrapped = screen(RULE, "❯ first row of a long", "  input that wrapped", RULE, "  footer")
    assert Pane.input_text(wrapped) == "first row of a long\ninput that wrapped"


# -- a real pane ---------------------------------------------------------------


def test_idle_detected_on_the_real_screen(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"))
    shown = run.pane.capture()
    assert "fake-prompt pid" in shown
    assert Pane.is_idle(shown)
    assert run.pane.wait_idle(timeout=3, settle=0.2)
    assert run.pane.exists()


def test_busy_then_idle(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"), "--busy-start", "1.5", "--busy-after", "1")
    t0 = time.monotonic()
    assert not Pane.is_idle(run.pane.capture())
    assert run.pane.wait_idle(timeout=0.4) is False
    assert time.monotonic() - t0 < 1.2
    assert run.pane.wait_idle(timeout=5, settle=0.2) is True
    assert time.monotonic() - t0 >= 1.4
    # going busy again after a submit is seen too
    run.pane.type_literal("x")
    run.pane.press("Enter")
    deadline = time.monotonic() + 0.8
    while Pane.is_idle(run.pane.capture()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not Pane.is_idle(run.pane.capture())
    assert run.pane.wait_idle(timeout=3, settle=0.1)


TRICKY = (
    r'''say "double" and 'single'; echo $(whoami) `id` ${HOME} C-c Enter Escape '''
    r'''\x1b[31m not red \n not a newline #{pane_id} %% ~ -x -- {a} } üñí 日本 ❯ end;'''
)


def test_tricky_text_arrives_byte_exact(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"), "--busy-after", "0")
    assert literal_text(TRICKY) == TRICKY  # nothing in it needs flattening
    run.pane.type_literal(TRICKY)
    run.pane.press("Enter")
    assert [e["line"] for e in run.wait_events(1)] == [TRICKY]
    assert run.raw_bytes() == TRICKY.encode("utf-8") + b"\r"


def test_semicolons_dashes_and_key_names_alone_arrive_literally(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"), "--busy-after", "0")
    texts = [";", ";;", "a;", "ends in backslash-semicolon \\;", "\\", "-l", "--", "Enter", "C-c", "M-Enter"]
    for i, text in enumerate(texts, 1):
        run.pane.type_literal(text)
        run.pane.press("Enter")
        run.wait_events(i)
    assert run.submitted() == texts


def test_long_text_is_chunked_without_losing_a_semicolon(server, tmp_path):
    from cc_continuity import tmux

    run = server.start_fake(str(tmp_path / "f"), "--busy-after", "0")
    text = ("x" * (tmux.CHUNK_CHARS - 1) + ";") * 2 + "tail"
    run.pane.type_literal(text)
    run.pane.press("Enter")
    assert run.wait_events(1)[0]["line"] == text


def test_control_characters_never_reach_the_pane_as_keys(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"), "--busy-after", "0")
    text = "line one\nline two\r\nthree\ttab \x1b[31mred\x1b[0m \x03 \x7f \x9b end"
    sent = run.pane.type_literal(text)
    assert sent == literal_text(text)
    assert sent == "line one line two three tab \\x1b[31mred\\x1b[0m \\x03 \\x7f \\x9b end"
    run.pane.press("Enter")
    assert [e["line"] for e in run.wait_events(1)] == [sent]  # one submit: no early Enter
    raw = run.raw_bytes()
    assert raw == sent.encode("utf-8") + b"\r"
    assert not any(b < 0x20 for b in raw[:-1])


def test_press_sends_one_named_key_only(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"))
    for bad in ("Enter; kill-server", "a b", "", ";", "-t"):
        with pytest.raises(ValueError):
            run.pane.press(bad)
    run.pane.press("a")
    run.pane.press("BSpace")
    run.pane.press("b")
    run.pane.press("Enter")
    assert run.wait_events(1)[0]["line"] == "b"
    assert run.raw_bytes() == b"a\x7fb\r"


def test_rename_session_and_window(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"))
    run.pane.rename_session("proj-005")
    run.pane.rename_window("my.proj:005")
    names = server.tmux("display-message", "-p", "-t", run.pane_id, "#{session_name}|#{window_name}")
    assert names.strip() == "proj-005|my_proj_005"
    assert tmux_name("a.b:c") == "a_b_c"
    with pytest.raises(ValueError):
        tmux_name(" ")


def test_rename_to_a_taken_session_name_is_a_tmux_error(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"))
    server.tmux("new-session", "-d", "-s", "taken")
    with pytest.raises(TmuxError, match="taken"):
        run.pane.rename_session("taken")


def test_vanished_pane_and_server_raise_tmux_error(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"))
    server.tmux("new-session", "-d", "-s", "keepalive")  # the server outlives the pane
    server.tmux("kill-pane", "-t", run.pane_id)
    assert not run.pane.exists()
    for call in (run.pane.capture, lambda: run.pane.type_literal("x"), lambda: run.pane.press("Enter"),
                 lambda: run.pane.rename_session("n"), lambda: run.pane.wait_idle(1)):
        with pytest.raises(TmuxError, match=run.pane_id):
            call()
    nowhere = Pane(str(tmp_path / "no-such-socket"), "%0")
    assert not nowhere.exists()
    with pytest.raises(TmuxError):
        nowhere.capture()


def test_exited_program_in_a_kept_pane_is_an_error(server, tmp_path):
    run = server.start_fake(str(tmp_path / "f"))
    server.tmux("set-option", "-t", run.pane_id, "-w", "remain-on-exit", "on")
    pid = int(server.tmux("display-message", "-p", "-t", run.pane_id, "#{pane_pid}"))
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and run.pane.exists():
        time.sleep(0.05)
    assert not run.pane.exists()
    with pytest.raises(TmuxError, match="exited"):
        run.pane.capture()


def test_missing_tmux_binary_is_a_clear_error(server, tmp_path, monkeypatch):
    run = server.start_fake(str(tmp_path / "f"))
    with pytest.raises(TmuxError, match="not found"):
        Pane(server.socket, run.pane_id, tmux_bin=str(tmp_path / "no-tmux")).capture()
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TmuxError, match="not found"):
        Pane(server.socket, run.pane_id).capture()
    with pytest.raises(TmuxError, match="not found"):
        Pane(server.socket, run.pane_id).exists()
