"""Gemini CLI as a host (issue 36): its session file (:mod:`.chats`) and its port (:mod:`.host`) so far; its
hook entry, install piece and doctor unit join it before it is a row of ``hosts.HOSTS``."""
