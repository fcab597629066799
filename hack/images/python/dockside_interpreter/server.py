"""The REPL server: one JSON object per line in (execute, interrupt), one per line out (ready, stream, result,
error), on copies of the process's original stdin and stdout, which the code it runs never sees
(docs/design/interpreter.md)."""

import json
import os
import platform
import queue
import signal
import threading
import time

from . import PROTOCOL
from .capture import Capture, Output
from .cell import Session

# Bytes of each stream a result holds when the request does not say (docs/design/interpreter.md, "execute").
DEFAULT_MAX_OUTPUT = 1 << 20


class Channel:
    """The protocol's two ends: private copies of fds 0 and 1 (not inherited by subprocesses); fd 0 becomes
    /dev/null for the code, which reads end of file."""

    def __init__(self):
        self._in = os.fdopen(os.dup(0), "rb")
        self._out = os.fdopen(os.dup(1), "wb")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self._lock = threading.Lock()

    def send(self, message):
        line = json.dumps(message, ensure_ascii=True, default=str) + "\n"
        with self._lock:
            self._out.write(line.encode("ascii"))
            self._out.flush()

    def messages(self):
        """The requests, parsed; a line that is not a JSON object is answered with an error and skipped."""
        for line in self._in:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError("not a JSON object")
            except ValueError as exc:
                self.send({"type": "error", "id": None,
                           "message": f"a request must be one JSON object per line: {exc}"})
                continue
            yield message


class Server:
    def __init__(self):
        self.channel = Channel()
        self.capture = Capture(DEFAULT_MAX_OUTPUT)
        self.session = Session()
        self.requests = queue.Queue()
        self.lock = threading.Lock()
        self.pending = 0  # executions received and not yet answered
        signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum, frame):
        # Raised only into running code, once per interrupt: never into the server's own loop.
        if self.session.running:
            self.session.take_interrupt()

    def interrupt(self):
        """Meant for the execution running or about to run; with none received and unanswered, dropped."""
        with self.lock:
            if not self.pending:
                return
            self.session.interrupt = True
            if self.session.running:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    def read(self):
        """The reading thread: executions queue for the main thread (signals reach only it), interrupts act at
        once. End of file ends the server once the queue is done."""
        for message in self.channel.messages():
            kind = message.get("type")
            if kind == "execute":
                with self.lock:
                    self.pending += 1
                self.requests.put(message)
            elif kind == "interrupt":
                self.interrupt()
            else:
                self.channel.send({"type": "error", "id": message.get("id"),
                                   "message": f"unknown request type {kind!r}: execute or interrupt"})
        self.requests.put(None)

    def serve(self):
        threading.Thread(target=self.read, name="dockside-requests", daemon=True).start()
        self.channel.send({"type": "ready", "protocol": PROTOCOL, "python": platform.python_version(),
                           "pid": os.getpid()})
        while True:
            request = self.requests.get()
            if request is None:
                return 0
            reply = self.execute(request)
            # Before the reply goes out: once the client has it, its next interrupt is meant for the next one.
            with self.lock:
                self.pending -= 1
                self.session.interrupt = False  # one that came too late for this execution
            self.channel.send(reply)

    def execute(self, request):
        """The reply to an execute request: its result, or an error for a malformed one."""
        rid = request.get("id")
        code = request.get("code")
        limit = request.get("max_output_bytes", DEFAULT_MAX_OUTPUT)
        if not isinstance(code, str) or not isinstance(limit, int) or limit < 0:
            return {"type": "error", "id": rid,
                    "message": "execute needs code (a string) and max_output_bytes (an integer >= 0)"}
        stream = None
        if request.get("stream"):
            def stream(name, text):
                self.channel.send({"type": "stream", "id": rid, "name": name, "text": text})
        start = time.monotonic()
        self.capture.begin(Output(limit, stream))
        value, error = self.session.execute(code, max(limit, 1))
        output = self.capture.end()
        return {"type": "result", "id": rid, "execution_count": self.session.count,
                "status": "error" if error else "ok", **output.fields(), "value": value,
                "error": error, "duration_ms": round((time.monotonic() - start) * 1000, 3)}


def serve():
    try:
        return Server().serve()
    except BrokenPipeError:
        return 0  # the client went away; the exec ends with us
