"""The window a model server says it runs with: asked at ``configure --window auto``, never on a hook's path.

A local server (llama.cpp's ``llama-server``, vLLM, Ollama, LM Studio, a LiteLLM proxy) knows its real
context size; the hosts guess one for a model id they do not know (Claude Code and Gemini CLI 1M).  This
folder asks the server, in each shape its own documents give (:mod:`.shapes`), through one bounded client
(:mod:`.ask`); where the base URL, the model id and a credential come from is each host's (:mod:`.sources`):
only the user's own shell and user settings, never a repository's.  The core never imports this folder.
"""
