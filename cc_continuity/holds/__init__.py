"""Side-effect holds and the handoff's claims read shell the way a shell does.

:mod:`.shell` is the one reading of a Bash command for both: every simple command wherever it is
nested (loops, ``if``, ``{ }``, ``!``, backticks, ``$( )``, here-documents), the wrappers and the
strings that are shell again (``sudo -u x``, ``timeout -s KILL 5``, ``xargs``, ``eval "…"``,
``sh -c "…"``, ``ssh host '…'``, a here-document fed to a shell) unwrapped, and which commands an
exit status of 0 proves succeeded.  tree-sitter's bash grammar where it can be imported (the app
copy's ``lib/``, a plugin's built packages: :mod:`cc_continuity.deps`), the tokenizer of our own
where it cannot; where the tree has errors (zsh syntax) both readings count.

What a repeat would harm is :mod:`.classify`'s; :mod:`.effects` keeps the two-phase record of each
such call (the project's ``effects.jsonl``) and decides a hold: the protocol and every host's
tool-call step use it.

A library below the protocol: it imports the root only.
"""
