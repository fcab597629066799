"""sbx.run_code: a stateful Python interpreter in the Sandbox (dockside_interpreter, started through one exec
session as `python3 -m dockside_interpreter`), spoken to in the JSON lines of docs/design/interpreter.md.
Variables and imports persist from one call to the next, for as long as the session lives."""

from __future__ import annotations

import itertools
import json
import queue
import threading
import time
from typing import Any, Dict, List, Optional

from .commandio import OnText
from .commands import CommandHandle, Commands
from .errors import CodeTimeout, DocksideError

PROTOCOL = 1
COMMAND = ["python3", "-m", "dockside_interpreter"]
START_SECONDS = 60  # for the interpreter's first line: an exec and a Python start on a loaded node
INTERRUPT_GRACE = 5  # seconds an interrupted execution has to end before the session is killed

_ENDED = object()  # queued when the exec session ends
_CANCEL = object()  # queued by cancel(): the waiting call stops its execution


class CodeValue:
    """The value of the code's last expression: repr (its repr()), text (text/plain, pretty-printed) and data, a
    MIME bundle that also holds text/html, image/png (base64) ... when the value offers them."""

    def __init__(self, value: Dict[str, Any]) -> None:
        self.repr: str = value["repr"]
        self.data: Dict[str, str] = value.get("data") or {}
        self.text = self.data.get("text/plain", self.repr)

    def __repr__(self) -> str:
        return f"CodeValue({self.repr})"


class CodeError:
    """The exception the code raised: name (its class), value (its message) and traceback (lines; str() is the
    whole text Python prints)."""

    def __init__(self, error: Dict[str, Any]) -> None:
        self.name: str = error["name"]
        self.value: str = error["value"]
        self.traceback: List[str] = list(error.get("traceback") or [])

    def __str__(self) -> str:
        return "".join(self.traceback) or f"{self.name}: {self.value}"

    def __repr__(self) -> str:
        return f"CodeError({self.name}: {self.value})"


class CodeResult:
    """One execution: stdout, stderr (text, what the code and its subprocesses wrote, each capped at
    max_output_bytes with the rest counted in *_truncated_bytes), value (a CodeValue, or None when the code did
    not end in an expression with a value), error (a CodeError, or None), execution_count, ok."""

    def __init__(self, msg: Dict[str, Any]) -> None:
        self.stdout: str = msg.get("stdout", "")
        self.stderr: str = msg.get("stderr", "")
        self.stdout_truncated_bytes: int = msg.get("stdout_truncated_bytes", 0)
        self.stderr_truncated_bytes: int = msg.get("stderr_truncated_bytes", 0)
        self.value = CodeValue(msg["value"]) if msg.get("value") else None
        self.error = CodeError(msg["error"]) if msg.get("error") else None
        self.execution_count: Optional[int] = msg.get("execution_count")
        self.duration_ms: Optional[float] = msg.get("duration_ms")

    @property
    def ok(self) -> bool:
        return self.error is None

    def __repr__(self) -> str:
        shown = f"error={self.error!r}" if self.error else f"value={self.value!r}"
        return f"CodeResult({shown}, stdout={self.stdout!r}, stderr={self.stderr!r})"


class Interpreter:
    """One interpreter session in the Sandbox, started at the first run() and again after it was killed. One
    run at a time; run() from several threads queues. close() (or the with block) ends it."""

    def __init__(self, commands: Commands, where: str) -> None:
        self._commands, self._where = commands, where
        self._handle: CommandHandle | None = None
        # The session's messages (dicts), _ENDED and _CANCEL; a new queue for each session.
        self._messages: queue.Queue[Any] = queue.Queue()
        self._partial = ""
        self._printed: List[str] = []  # lines of the exec's stdout before the server's first, when it could not start
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def __enter__(self) -> Interpreter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, code: str, timeout: float | None = 60, on_stdout: OnText | None = None,
            on_stderr: OnText | None = None, max_output_bytes: int | None = None) -> CodeResult:
        """Runs code and returns its CodeResult; an exception in the code is result.error, not raised.
        on_stdout and on_stderr get the output as it is written, on this thread. Past timeout seconds (None: no
        limit), or on KeyboardInterrupt or cancel(), the code is interrupted (KeyboardInterrupt in it, the
        session's state kept); should it not end within INTERRUPT_GRACE seconds, the session is killed, with
        all it started, and the next run starts a new one. A timeout raises CodeTimeout, with .result when the
        code stopped."""
        with self._lock:
            if self._handle is None or not self._handle.running():
                self._start()
            self._drop_stale_cancels()
            rid = str(next(self._ids))
            request: Dict[str, Any] = {"type": "execute", "id": rid, "code": code,
                                       "stream": bool(on_stdout or on_stderr)}
            if max_output_bytes is not None:
                request["max_output_bytes"] = int(max_output_bytes)
            self._send(request)
            deadline = None if timeout is None else time.monotonic() + timeout
            try:
                return self._await(rid, deadline, on_stdout, on_stderr)
            except _Stopped as stop:
                result = self._stop(rid)
                if stop.timeout:
                    raise CodeTimeout("CodeTimeout", f"the code ran past its {timeout}s timeout: "
                                      + _stopped_how(result), result=result) from None
                raise DocksideError("Cancelled", "the code was cancelled: " + _stopped_how(result),
                                    result=result) from None
            except BaseException:  # KeyboardInterrupt in this thread: stop the code, then let it through
                self._stop(rid)
                raise

    def cancel(self) -> None:
        """Makes the run() in progress (in another thread) interrupt its code and raise; thread-safe."""
        self._messages.put(_CANCEL)

    def close(self) -> None:
        """Ends the session (its exec), and everything it started."""
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.kill()

    def _start(self) -> None:
        self._messages, self._partial = queue.Queue(), ""
        self._handle = self._commands.start(COMMAND, on_stdout=self._feed, open_stdin=True)
        threading.Thread(target=self._watch, args=(self._handle, self._messages), daemon=True).start()
        deadline = time.monotonic() + START_SECONDS
        msg, self._printed = self._next(deadline), []
        while isinstance(msg, dict) and msg.get("type") == "output":
            self._printed.append(msg["text"])
            msg = self._next(deadline)
        if msg is None:
            self.close()
            raise DocksideError("InterpreterNotStarted", f"{self._where}: the interpreter wrote nothing in "
                                f"{START_SECONDS}s")
        if msg is _ENDED:
            raise self._ended_error(starting=True)
        if msg is _CANCEL:
            self.close()
            raise DocksideError("Cancelled", f"{self._where}: cancelled while the interpreter started")
        if msg.get("type") != "ready" or msg.get("protocol") != PROTOCOL:
            self.close()
            raise DocksideError("InterpreterProtocol", f"{self._where}: the interpreter speaks protocol "
                                f"{msg.get('protocol')!r}, this client {PROTOCOL} (docs/design/interpreter.md)")

    def _drop_stale_cancels(self) -> None:
        """A cancel that came after the last run ended is not meant for this one."""
        kept = []
        while True:
            try:
                msg = self._messages.get_nowait()
            except queue.Empty:
                break
            if msg is not _CANCEL:
                kept.append(msg)
        for msg in kept:
            self._messages.put(msg)

    def _await(self, rid: str, deadline: float | None, on_stdout: OnText | None,
               on_stderr: OnText | None) -> CodeResult:
        callbacks = {"stdout": on_stdout, "stderr": on_stderr}
        while True:
            msg = self._next(deadline)
            if msg is None:
                raise _Stopped(timeout=True)
            if msg is _CANCEL:
                raise _Stopped(timeout=False)
            if msg is _ENDED:
                raise self._ended_error(starting=False)
            if msg.get("id") != rid:
                continue  # the end of an execution given up on earlier
            if msg["type"] == "stream":
                callback = callbacks.get(msg.get("name"))
                if callback:
                    callback(msg.get("text", ""))
            elif msg["type"] == "result":
                return CodeResult(msg)
            elif msg["type"] == "error":
                raise DocksideError("BadRequest", f"the interpreter refused the request: {msg.get('message')}")

    def _stop(self, rid: str) -> CodeResult | None:
        """Interrupts execution rid and returns its CodeResult, or kills the session when it does not end within
        the grace (or when the caller interrupts again) and returns None."""
        try:
            self._send({"type": "interrupt"})
            deadline = time.monotonic() + INTERRUPT_GRACE
            while True:
                msg = self._next(deadline)
                if msg is None or msg is _ENDED:
                    break
                if msg is not _CANCEL and msg.get("id") == rid and msg.get("type") == "result":
                    return CodeResult(msg)
        except DocksideError:
            pass  # the session is gone already
        except BaseException:  # interrupted again while waiting (a second Ctrl-C)
            self.close()
            raise
        self.close()
        return None

    def _next(self, deadline: float | None) -> Any:
        """The next message, _ENDED, _CANCEL, or None once deadline (monotonic; None: never) has passed."""
        try:
            if deadline is None:
                return self._messages.get()
            return self._messages.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None

    def _send(self, message: Dict[str, Any]) -> None:
        if self._handle is None:  # closed by another thread
            raise self._closed_error()
        self._handle.send_stdin(json.dumps(message) + "\n")

    def _feed(self, text: str) -> None:
        """on_stdout of the exec: whole lines become messages (on the exec's reading thread)."""
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            if line.strip():
                try:
                    self._messages.put(json.loads(line))
                except ValueError:  # not the server: what the exec printed when the command could not start
                    self._messages.put({"type": "output", "text": line})

    @staticmethod
    def _watch(handle: CommandHandle, messages: queue.Queue[Any]) -> None:
        try:
            handle.wait()
        except Exception:  # noqa: BLE001 -- the exec's failure: _ended_error reads it from the handle
            pass
        finally:
            messages.put(_ENDED)

    def _closed_error(self) -> DocksideError:
        return DocksideError("InterpreterEnded", f"{self._where}: the interpreter session was closed")

    def _ended_error(self, starting: bool) -> DocksideError:
        handle, self._handle = self._handle, None
        if handle is None:  # closed by another thread
            return self._closed_error()
        try:
            res = handle.wait(0)
            status, stderr = f"exit code {res.exit_code}", res.stderr.strip()
        except DocksideError as exc:
            status, stderr = exc.message, handle.stderr.strip()
        except Exception:  # noqa: BLE001 -- what it printed is said below
            status, stderr = "its stream ended", handle.stderr.strip()
        stderr = "\n".join(self._printed + ([stderr] if stderr else [])).strip()
        if starting and "No module named dockside_interpreter" in stderr:
            return DocksideError("InterpreterMissing", f"{self._where} has no dockside_interpreter module: run_code "
                                 "needs an image that carries it, as dockside.dev/python:local does "
                                 "(hack/build-images.sh python; docs/design/interpreter.md)")
        what = "could not start" if starting else "ended; its state is lost, and the next run starts a new one"
        reason = "InterpreterNotStarted" if starting else "InterpreterEnded"
        return DocksideError(reason, f"{self._where}: the interpreter {what} ({status})"
                             + (f": {stderr[-2000:]}" if stderr else ""))


class _Stopped(Exception):
    def __init__(self, timeout: bool) -> None:
        super().__init__()
        self.timeout = timeout


def _stopped_how(result: CodeResult | None) -> str:
    if result is not None:
        return "it was interrupted (KeyboardInterrupt) and the session kept its state"
    return (f"it did not stop within {INTERRUPT_GRACE}s of an interrupt, so the session was killed: its state is "
            "lost, and the next run starts a new one")
