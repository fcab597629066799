"""What streamed and background commands share: their CommandResult, and stdin cut in pieces."""

CHUNK = 32 * 1024  # bytes of stdin per message or request


class CommandResult:
    """How a command ended: exit_code (None when the client ended it first), its stdout and stderr as text
    (UTF-8; invalid bytes replaced) and as bytes (stdout_bytes, stderr_bytes)."""

    def __init__(self, exit_code, stdout_bytes, stderr_bytes):
        self.exit_code = exit_code
        self.stdout_bytes, self.stderr_bytes = bytes(stdout_bytes), bytes(stderr_bytes)

    @property
    def stdout(self):
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self):
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self):
        return self.exit_code == 0

    def __repr__(self):
        return f"CommandResult(exit_code={self.exit_code}, stdout={self.stdout!r}, stderr={self.stderr!r})"


def chunks(data):
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
