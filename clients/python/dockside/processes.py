"""Background commands through the Sandbox's processes subresource (docs/design/dataplane.md, "Signals and
background processes"): plain HTTP calls, none held open longer than a follow's 45 s, so a process started here
runs on whatever becomes of the client's connection, and any client may find it again by its ID."""

from __future__ import annotations

import codecs
import json
import threading
import time
from typing import Any, Dict, List, Sequence
from urllib.parse import quote

from urllib3.exceptions import HTTPError
from urllib3.response import HTTPResponse

from .api import Api
from .commandio import CommandResult, Input, OnText, chunks
from .dataplane import Params
from .errors import ApiError, DocksideError, WaitTimeout

BLOCK = 64 * 1024  # bytes per read of an output stream
CALL_TIMEOUT = 60  # seconds for a call that is answered at once (kube-apiserver's own request timeout)
# A follow is answered within 45 s (the agent ends it so that kube-apiserver does not cut it); a read that
# waits longer than this for a byte gives up and asks again.
FOLLOW_TIMEOUT = 75


class ProcessHandle:
    """A process started in the Sandbox's primary in the background, or found again by ID (commands.connect).
    It lives in the agent, not in this object: the client may go away and come back. stdout and stderr are its
    output so far (the agent keeps the last 256 KiB of each); wait() returns its CommandResult once it ends;
    kill() signals its process group; send_stdin() and close_stdin() feed its input. on_stdout and on_stderr
    are called with each piece of text as it is written, on threads of their own; an exception they raise kills
    the process and is raised by wait()."""

    def __init__(self, api: Api, namespace: str, name: str, info: Dict[str, Any], on_stdout: OnText | None = None,
                 on_stderr: OnText | None = None) -> None:
        self._api, self._namespace, self._name = api, namespace, name
        self.id: str = info["id"]
        self.command: List[str] = info.get("command") or []
        self._callback_error: BaseException | None = None
        self._followers = [threading.Thread(target=self._follow, args=(stream, callback), daemon=True,
                                            name=f"dockside-{stream}")
                           for stream, callback in (("stdout", on_stdout), ("stderr", on_stderr)) if callback]
        for follower in self._followers:
            follower.start()

    def __repr__(self) -> str:
        return f"ProcessHandle(id={self.id!r}, command={self.command!r})"

    def info(self) -> Dict[str, Any]:
        """What the agent says of the process now: a dict with id, command, running, startTime, endTime,
        exitCode (once it exited), error (when it ended otherwise), stdoutBytes and stderrBytes."""
        return self._json("GET", "")

    def running(self) -> bool:
        return self.info()["running"]

    @property
    def stdout(self) -> str:
        return self._output("stdout").decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self._output("stderr").decode("utf-8", "replace")

    def result(self, info: Dict[str, Any] | None = None) -> CommandResult:
        """Its output kept so far and its exit code (None while it runs, or when it ended without one)."""
        info = info or self.info()
        return CommandResult(info.get("exitCode"), self._output("stdout"), self._output("stderr"))

    def wait(self, timeout: float | None = None) -> CommandResult:
        """The CommandResult once the process ends; a signal it died of is Docker's exit code 128+n. Past
        timeout (seconds) WaitTimeout is raised and the process runs on. A process that ended without an exit
        code (its container stopped, or the agent) raises DocksideError ProcessLost in the agent's words."""
        deadline = None if timeout is None else time.monotonic() + timeout
        info = self.info()
        while info["running"]:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WaitTimeout("CommandRunning", f"process {self.id} still runs after {timeout}s",
                                  result=self.result(info))
            self._await_end(info.get("stdoutBytes", 0), left)
            info = self.info()
        for follower in self._followers:
            follower.join()
        if self._callback_error is not None:
            raise self._callback_error
        result = self.result(info)
        if result.exit_code is None:
            raise DocksideError("ProcessLost", info.get("error") or f"process {self.id} ended without an exit code",
                                result=result)
        return result

    def kill(self, signal: str | int = "KILL") -> bool:
        """Sends signal (TERM, INT, HUP, KILL, ... or its number) to the process's group; what it started
        gets it too. True when it was sent, False when the process had ended already."""
        try:
            self._call("POST", "/signal", [("signal", str(signal))])
        except ApiError as exc:
            if exc.status == 409 and "has ended" in exc.message:
                return False
            raise
        return True

    def send_stdin(self, data: Input) -> None:
        """Writes str (UTF-8), bytes or a binary file's contents to its input, which must have been opened
        (commands.run opens it). The call returns once the process has taken it (a pipe's worth ahead)."""
        for piece in chunks(data):
            self._call("POST", "/stdin", [], body=piece)

    def close_stdin(self) -> None:
        """Ends its input (it reads end of file); its output goes on."""
        self._call("POST", "/stdin", [("close", "true")], body=b"")

    def _await_end(self, offset: int, left: float | None) -> None:
        """Follows stdout from offset, which the agent answers once the process ends, or after 45 s, or when
        left seconds pass; what it sends is dropped (stdout and result() read it again)."""
        timeout = FOLLOW_TIMEOUT if left is None else max(0.05, min(left, FOLLOW_TIMEOUT))
        deadline = time.monotonic() + timeout
        try:
            resp = self._call("GET", "/stdout", [("from", str(offset)), ("follow", "true")], timeout=timeout)
            try:
                for _ in resp.stream(BLOCK):
                    if time.monotonic() > deadline:
                        break
            finally:
                resp.release_conn()
        except HTTPError:
            pass  # a read that timed out: the caller looks again

    def _follow(self, stream: str, callback: OnText) -> None:
        """Hands each piece of the stream's text to callback as it is written, from its first byte kept on,
        until the process ends. A callback's exception kills the process; wait() raises it."""
        decoder, offset = codecs.getincrementaldecoder("utf-8")("replace"), 0
        try:
            while True:
                try:
                    resp = self._call("GET", "/" + stream, [("from", str(offset)), ("follow", "true")],
                                      timeout=FOLLOW_TIMEOUT)
                    try:
                        offset = int(resp.headers.get("X-Dockside-Output-Start", offset))
                        for data in resp.stream(BLOCK):
                            offset += len(data)
                            text = decoder.decode(data)
                            if text:
                                callback(text)
                    finally:
                        resp.release_conn()
                except HTTPError:
                    pass  # a read that timed out, or a connection cut: ask again from where it got to
                info = self.info()
                if not info["running"] and offset >= info.get(f"{stream}Bytes", 0):
                    break
            tail = decoder.decode(b"", final=True)
            if tail:
                callback(tail)
        except ApiError:
            pass  # the process is gone from the agent's table (or the agent from reach): nothing more to hand on
        except BaseException as exc:  # a callback's: the process ends with it, wait() raises it
            self._callback_error = exc
            try:
                self.kill()
            except DocksideError:
                pass

    def _output(self, stream: str) -> bytes:
        resp = self._call("GET", "/" + stream, [])
        try:
            return resp.read()
        finally:
            resp.release_conn()

    def _json(self, method: str, sub: str) -> Any:
        resp = self._call(method, sub, [])
        try:
            return json.loads(resp.read())
        finally:
            resp.release_conn()

    def _call(self, method: str, sub: str, params: Params, body: bytes | None = None,
              timeout: float = CALL_TIMEOUT) -> HTTPResponse:
        return self._api.processes(self._namespace, self._name, method, "/" + quote(self.id, safe="") + sub,
                                   params, body=body, timeout=timeout)


def start(api: Api, namespace: str, name: str, argv: Sequence[str], stdin: Input | None = None,
          on_stdout: OnText | None = None, on_stderr: OnText | None = None) -> ProcessHandle:
    """Starts argv in the background with its input open and returns its ProcessHandle; stdin, when given, is
    written first."""
    resp = api.processes(namespace, name, "POST", "", [("command", a) for a in argv] + [("stdin", "true")],
                         timeout=CALL_TIMEOUT)
    try:
        info = json.loads(resp.read())
    finally:
        resp.release_conn()
    handle = ProcessHandle(api, namespace, name, info, on_stdout, on_stderr)
    if stdin is not None:
        handle.send_stdin(stdin)
    return handle


def list_all(api: Api, namespace: str, name: str) -> List[Dict[str, Any]]:
    """GET processes: the Sandbox's processes as the agent lists them, oldest first."""
    resp = api.processes(namespace, name, "GET", "", [], timeout=CALL_TIMEOUT)
    try:
        return json.loads(resp.read())["items"]
    finally:
        resp.release_conn()
