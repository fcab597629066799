"""Commands streamed through the Sandbox's exec subresource (Kubernetes' WebSocket channel protocol v5): output
reaches the caller as it is written, stdin of any size, the exit code at the end. A timeout, kill() and
KeyboardInterrupt close the stream; the agent kills what an exec started when it notices its stream ended
(docs/design/dataplane.md, "Exec"), today at the command's next write (clients/python/README.md)."""

from __future__ import annotations

import codecs
import json
import socket
import threading
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Union, overload

from websocket import ABNF, WebSocket, WebSocketException

from . import processes
from .api import Api
from .commandio import CommandResult, Input, OnText, chunks
from .errors import CommandTimeout, DocksideError, WaitTimeout

STDIN, STDOUT, STDERR, ERROR = 0, 1, 2, 3
CLOSE_SIGNAL = 255  # v5: [255, channel] ends that channel (our stdin) while the output goes on

# A command: a shell command line (str), or an argv run as it is (its words made str).
Command = Union[str, Sequence[object]]


def argv_of(cmd: Command, env: Mapping[str, object] | None = None, cwd: str | None = None) -> List[str]:
    """A string is a shell command line (sh -c), a list an argv run as it is. The exec protocol carries neither
    environment nor directory, so env goes through the image's env and cwd through its sh."""
    argv = ["sh", "-c", cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
    if not argv:
        raise ValueError("an empty command: give a shell command line or an argv list")
    if cwd is not None:
        argv = ["sh", "-c", 'cd -- "$1" && shift && exec "$@"', "sh", str(cwd)] + argv
    if env:
        bad = [k for k in env if not k or "=" in k]
        if bad:
            raise ValueError(f"environment variable names may not be empty or hold '=': {bad}")
        argv = ["env"] + [f"{k}={v}" for k, v in sorted(env.items())] + argv
    return argv


class CommandHandle:
    """A command running in the Sandbox, its output read by a thread of its own as it arrives. stdout and
    stderr hold its output so far; wait() returns its CommandResult; kill() ends it; send_stdin() and
    close_stdin() feed it. on_stdout and on_stderr are called on the reading thread with each piece of text
    (never a split UTF-8 character); an exception they raise ends the command and is raised by wait(). With
    limit, only the first limit bytes of each stream are kept (the callbacks still get all of it), and cut()
    counts the rest: output that has no reader bounds the client's memory as an Execution's cap bounds its
    status."""

    def __init__(self, sock: WebSocket, on_stdout: OnText | None = None, on_stderr: OnText | None = None,
                 limit: int | None = None) -> None:
        self._sock = sock
        self._out = {STDOUT: bytearray(), STDERR: bytearray()}
        self._limit = limit
        self._cut = {STDOUT: 0, STDERR: 0}
        self._callbacks: Dict[int, Optional[OnText]] = {STDOUT: on_stdout, STDERR: on_stderr}
        self._decoders = {ch: codecs.getincrementaldecoder("utf-8")("replace") for ch in self._out}
        self._status = bytearray()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._killed = False
        self._error: BaseException | None = None
        self.exit_code: int | None = None
        self._reader = threading.Thread(target=self._read, name="dockside-exec", daemon=True)
        self._reader.start()

    @property
    def stdout(self) -> str:
        with self._lock:
            return self._out[STDOUT].decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        with self._lock:
            return self._out[STDERR].decode("utf-8", "replace")

    def running(self) -> bool:
        return not self._done.is_set()

    def result(self) -> CommandResult:
        """The output so far and the exit code (None while it runs or once killed)."""
        with self._lock:
            return CommandResult(self.exit_code, self._out[STDOUT], self._out[STDERR])

    def cut(self) -> tuple[int, int]:
        """How many bytes of stdout and of stderr came past limit and were not kept (0 and 0 without one)."""
        with self._lock:
            return self._cut[STDOUT], self._cut[STDERR]

    def wait(self, timeout: float | None = None) -> CommandResult:
        """The CommandResult once the command ends. Past timeout (seconds) WaitTimeout is raised and the command
        runs on; the error channel's failure (not an exit code) raises DocksideError in the agent's words."""
        if not self._done.wait(timeout):
            raise WaitTimeout("CommandRunning", f"the command still runs after {timeout}s", result=self.result())
        if self._error is not None:
            raise self._error
        return self.result()

    def kill(self) -> None:
        """Closes the command's stream, which the agent ends it for once it notices, and waits for the reader."""
        self._killed = True
        self._close()
        self._reader.join()

    def send_stdin(self, data: Input) -> None:
        """Writes str (UTF-8), bytes or a binary file's contents to the command's stdin."""
        for piece in chunks(data):
            self._send(bytes([STDIN]) + piece)

    def close_stdin(self) -> None:
        """Ends the command's stdin (it reads end of file); its output goes on."""
        self._send(bytes([CLOSE_SIGNAL, STDIN]))

    def _send(self, message: bytes) -> None:
        try:
            self._sock.send(message, opcode=ABNF.OPCODE_BINARY)
        except (WebSocketException, OSError):
            raise DocksideError("CommandEnded", "the command's stream is closed: it has ended") from None

    def _read(self) -> None:
        try:
            while True:
                try:
                    opcode, frame = self._sock.recv_data_frame(True)
                except (WebSocketException, OSError):
                    break
                if opcode == ABNF.OPCODE_CLOSE:
                    break
                if opcode in (ABNF.OPCODE_BINARY, ABNF.OPCODE_TEXT) and len(frame.data) > 1:
                    self._take(frame.data[0], frame.data[1:])
            for channel, decoder in self._decoders.items():
                self._emit(channel, decoder.decode(b"", final=True))
            if not self._killed:
                self.exit_code = exit_code(bytes(self._status))
        except BaseException as exc:  # a callback's, or the error channel's failure: wait() raises it
            self._error = exc
        finally:
            self._close()
            self._sock.shutdown()  # frees the socket; only this thread reads it
            self._done.set()

    def _take(self, channel: int, data: bytes) -> None:
        if channel == ERROR:
            self._status += data
        elif channel in self._out:
            with self._lock:
                kept = self._out[channel]
                room = len(data) if self._limit is None else max(0, self._limit - len(kept))
                kept += data[:room]
                self._cut[channel] += len(data) - min(room, len(data))
            self._deliver(channel, data)

    def _deliver(self, channel: int, data: bytes) -> None:
        """Hands a piece of output to its callback, as text."""
        self._emit(channel, self._decoders[channel].decode(data))

    def _emit(self, channel: int, text: str) -> None:
        callback = self._callbacks[channel]
        if text and callback:
            callback(text)

    def _close(self) -> None:
        """Says goodbye and shuts the connection down; the reader's recv ends at once."""
        try:
            if self._sock.connected:
                self._sock.send_close()
        except (WebSocketException, OSError):
            pass
        raw = self._sock.sock
        if raw is not None:
            try:
                raw.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # closed already


def exit_code(status: bytes) -> int:
    """The exit code in the error channel's Status: Success is 0, NonZeroExitCode carries it as an ExitCode
    cause; any other failure (the command could not run) is raised in the agent's words."""
    if not status:
        raise DocksideError("StreamLost", "the exec stream ended before the command's exit status arrived")
    st = json.loads(status)
    if st.get("status") == "Success":
        return 0
    if st.get("reason") == "NonZeroExitCode":
        for cause in (st.get("details") or {}).get("causes") or []:
            if cause.get("reason", cause.get("type")) == "ExitCode":
                return int(cause["message"])
    raise DocksideError(st.get("reason") or "ExecFailed", st.get("message") or "the command could not run")


class Commands:
    """sbx.commands: commands streamed through the exec subresource (RBAC: create on sandboxes/exec in
    subresources.dockside.dev, which dockside-edit has), and background processes through the processes
    subresource (get and create on sandboxes/processes, dockside-edit too)."""

    def __init__(self, api: Api, namespace: str, name: str) -> None:
        self._api, self._namespace, self._name = api, namespace, name

    @overload
    def run(self, cmd: Command, stdin: Input | None = None, timeout: float | None = 60,
            on_stdout: OnText | None = None, on_stderr: OnText | None = None, background: Literal[False] = False,
            env: Mapping[str, object] | None = None, cwd: str | None = None) -> CommandResult: ...

    @overload
    def run(self, cmd: Command, stdin: Input | None = None, timeout: float | None = 60,
            on_stdout: OnText | None = None, on_stderr: OnText | None = None, *, background: Literal[True],
            env: Mapping[str, object] | None = None, cwd: str | None = None) -> processes.ProcessHandle: ...

    def run(self, cmd: Command, stdin: Input | None = None, timeout: float | None = 60,
            on_stdout: OnText | None = None, on_stderr: OnText | None = None, background: bool = False,
            env: Mapping[str, object] | None = None, cwd: str | None = None) -> CommandResult | processes.ProcessHandle:
        """Runs cmd (a shell command line, or an argv list run as it is) and returns its CommandResult; a
        non-zero exit is a result, not an error. stdin (str, bytes or a binary file) is written and then
        closed. on_stdout and on_stderr get the output as it is written. Past timeout seconds (None: no
        limit) the stream is closed (the agent ends the command once it notices) and CommandTimeout is raised
        with the output so far; a KeyboardInterrupt closes it the same way.

        background=True starts it through the processes subresource instead and returns its ProcessHandle
        at once (processes.py): it runs on without the client's connection, its stdin open for send_stdin
        (stdin, when given, is written first), timeout not applied (wait(timeout) or kill() it).

        env ({NAME: value}) is added to the command's environment and cwd is its directory, through the
        image's env and sh."""
        if background:
            return processes.start(self._api, self._namespace, self._name, argv_of(cmd, env, cwd), stdin,
                                   on_stdout, on_stderr)
        return finish(self.start(cmd, stdin, on_stdout, on_stderr, env, cwd), timeout)

    def start(self, cmd: Command, stdin: Input | None = None, on_stdout: OnText | None = None,
              on_stderr: OnText | None = None, env: Mapping[str, object] | None = None, cwd: str | None = None,
              open_stdin: bool = False, limit: int | None = None) -> CommandHandle:
        """The CommandHandle of cmd, started on an exec stream, which it ends with; stdin is written and closed
        as in run, or with open_stdin written first and left open for send_stdin (a session of the client's,
        as the interpreter's). limit caps the output the handle keeps (CommandHandle)."""
        argv = argv_of(cmd, env, cwd)
        sock = self._api.exec(self._namespace, self._name, argv, stdin=open_stdin or stdin is not None)
        handle = CommandHandle(sock, on_stdout, on_stderr, limit)
        if open_stdin:
            if stdin is not None:
                handle.send_stdin(stdin)
        elif stdin is not None:
            threading.Thread(target=feed, args=(handle, stdin), name="dockside-stdin", daemon=True).start()
        return handle

    def connect(self, process_id: str, on_stdout: OnText | None = None,
                on_stderr: OnText | None = None) -> processes.ProcessHandle:
        """The ProcessHandle of a background process started earlier, by any client, found by its ID;
        on_stdout and on_stderr get its output from the first byte the agent kept. ApiError NotFound when the
        Sandbox has no such process (an ended one is kept 15 minutes)."""
        handle = processes.ProcessHandle(self._api, self._namespace, self._name, {"id": process_id})
        info = handle.info()
        return processes.ProcessHandle(self._api, self._namespace, self._name, info, on_stdout, on_stderr)

    def list(self) -> List[Dict[str, Any]]:
        """The Sandbox's background processes and the execs that named themselves, oldest first, as the
        agent reports them (dicts: id, command, background, running, exitCode, ...)."""
        return processes.list_all(self._api, self._namespace, self._name)


def finish(handle: CommandHandle, timeout: float | None) -> CommandResult:
    """The handle's CommandResult; past timeout, or when interrupted, its stream is closed (which ends the
    command) and CommandTimeout, or the interruption, raised."""
    try:
        return handle.wait(timeout)
    except WaitTimeout:
        handle.kill()
        raise CommandTimeout("CommandTimeout", f"the command ran past its {timeout}s timeout: its stream was "
                             "closed", result=handle.result()) from None
    except BaseException:
        handle.kill()
        raise


def feed(handle: CommandHandle, stdin: Input) -> None:
    """Writes stdin and closes it, on a thread of its own: a command that writes before it reads would
    otherwise wait on us while we wait on it. A command that ends first ends this too."""
    try:
        handle.send_stdin(stdin)
        handle.close_stdin()
    except DocksideError:
        pass
