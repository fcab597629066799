"""Dockside's stateful Python interpreter: a small REPL server that runs in a Sandbox's image, started through one
exec session as `python3 -m dockside_interpreter`, and speaks JSON lines on stdin and stdout. The protocol, and
why it is ours rather than a Jupyter kernel, are in docs/design/interpreter.md. It needs only the standard
library of the image's python3."""

# The protocol's version, sent in the first line ("ready"); a client that sees another one stops.
PROTOCOL = 1
