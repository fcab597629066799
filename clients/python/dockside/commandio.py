"""What streamed and background commands share: their CommandResult, stdin cut in pieces, and the types of
both."""

from __future__ import annotations

from typing import IO, Any, Callable, Iterator, Union

CHUNK = 32 * 1024  # bytes of stdin per message or request

# What a command's stdin may be given as: text (sent as UTF-8), bytes, or a file object read to its end.
Input = Union[str, bytes, bytearray, memoryview, IO[Any]]
# A callback given each piece of a command's output as text.
OnText = Callable[[str], object]


class CommandResult:
    """How a command ended: exit_code (None when the client ended it first), its stdout and stderr as text
    (UTF-8; invalid bytes replaced) and as bytes (stdout_bytes, stderr_bytes)."""

    def __init__(self, exit_code: int | None, stdout_bytes: bytes | bytearray, stderr_bytes: bytes | bytearray) -> None:
        self.exit_code = exit_code
        self.stdout_bytes, self.stderr_bytes = bytes(stdout_bytes), bytes(stderr_bytes)

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def __repr__(self) -> str:
        return f"CommandResult(exit_code={self.exit_code}, stdout={self.stdout!r}, stderr={self.stderr!r})"


def chunks(data: Input) -> Iterator[bytes]:
    """stdin as bytes pieces of at most CHUNK: from str (UTF-8), bytes, or a binary file object."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        view = memoryview(data)
        for i in range(0, len(view), CHUNK):
            yield bytes(view[i:i + CHUNK])
        return
    while True:
        piece = data.read(CHUNK)
        if not piece:
            return
        yield piece.encode("utf-8") if isinstance(piece, str) else piece
