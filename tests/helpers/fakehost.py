"""A stand-in agent for the rotation's host port (cc_continuity/rotation/host.py): no transcript file at all.

What a real host reads from its agent's files, the test tells it: each reply with the
context size its request had (:meth:`FakeHost.reply`), the todo list, the context our
hooks added that the agent recorded (:meth:`FakeHost.received`), tool calls that never
ran.  Keyed by the transcript path the payload names, as a real host's files are.
"""

from cc_continuity.rotation.host import Host


class FakeHost(Host):
    name = "fake"

    def __init__(self, pid=None):
        self.pid = pid
        self.replies = {}    # transcript -> [(tokens, text)], oldest first
        self.context = {}    # transcript -> [text our hooks added that the agent recorded]
        self.todos = {}      # transcript -> [{"status", "content"}]
        self.not_run = set()  # tool_use_ids the agent never ran
        self.calls = []      # (method, transcript): what the rotation asked

    # -- what the test says happened ------------------------------------------------------------
    def reply(self, transcript, tokens, text="Working on it."):
        self.replies.setdefault(transcript, []).append((tokens, text))

    def received(self, transcript, text):
        self.context.setdefault(transcript, []).append(text)

    # -- the port -------------------------------------------------------------------------------
    def agent_pid(self, env):
        return self.pid

    def reading(self, transcript):
        self.calls.append(("reading", transcript))
        got = self.replies.get(transcript)
        if got is None:
            raise OSError("no transcript %s" % transcript)
        return {"tokens": got[-1][0] if got else None, "model": None, "source": "fake"}

    def reply_reading(self, transcript, last_message):
        self.calls.append(("reply_reading", transcript))
        got = self.replies.get(transcript)
        if not got:
            return False, None
        tokens, text = got[-1]
        reading = {"tokens": tokens, "model": None, "source": "fake"}
        return (not isinstance(last_message, str) or last_message == text), reading

    def first_request_tokens(self, transcript):
        got = self.replies.get(transcript)
        return got[0][0] if got else None

    def holds_context(self, transcript, needle):
        held = self.context.get(transcript)
        if not held or not isinstance(needle, str):
            return None
        return any(needle in text for text in held)

    def open_todos(self, transcript):
        return self.todos.get(transcript)

    def last_reply(self, transcript):
        got = self.replies.get(transcript)
        return got[-1][1] if got else None

    def call_ran(self, transcript, tool_use_id):
        return "not run" if tool_use_id in self.not_run else None
