"""python3 -m dockside_interpreter: serves the protocol of docs/design/interpreter.md on stdin and stdout."""

import sys

from dockside_interpreter.server import serve

if __name__ == "__main__":
    sys.exit(serve())
