"""sbx.pty: a terminal in the Sandbox over the exec subresource with a TTY (docs/design/dataplane.md, "Exec"):
what is typed goes to the terminal, its output (stdout and stderr as one stream, escape sequences and all)
comes back as bytes, and the client sets its size. Ctrl-C typed reaches the foreground process as SIGINT."""

from __future__ import annotations

import json
from typing import Callable

from websocket import WebSocket

from .commandio import Input
from .commands import CommandHandle

RESIZE = 4  # the channel that carries the terminal's size: {"Width": columns, "Height": rows}


class Pty(CommandHandle):
    """A command running on a terminal. on_data is called with each piece of output (bytes) on the reading
    thread; stdout holds the output so far as text. send_input(data) types, resize(cols, rows) sets the size,
    wait(timeout) returns its CommandResult, kill() closes the stream, which ends it and what it started."""

    def __init__(self, sock: WebSocket, on_data: Callable[[bytes], object] | None = None, cols: int = 80,
                 rows: int = 24) -> None:
        self._on_data = on_data
        super().__init__(sock)
        self.resize(cols, rows)

    def send_input(self, data: Input) -> None:
        """Types str (UTF-8) or bytes, e.g. "ls\\n" or "\\x03" (Ctrl-C)."""
        self.send_stdin(data)

    def resize(self, cols: int, rows: int) -> None:
        self._send(bytes([RESIZE]) + json.dumps({"Width": int(cols), "Height": int(rows)}).encode())

    def _deliver(self, channel: int, data: bytes) -> None:
        if self._on_data:
            self._on_data(bytes(data))
