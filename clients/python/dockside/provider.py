"""DocksideSandbox: a Dockside session Sandbox in the shape agent frameworks take a sandbox in, written from their
documented interfaces (the frameworks are not installable here: clients/python/README.md, "Agent frameworks").

- LangChain deep agents' sandbox backend: execute(command) -> ExecuteResponse(output, exit_code, truncated),
  upload_files([(path, bytes)]) -> [FileUploadResponse(path, error)], download_files([path]) ->
  [FileDownloadResponse(path, content, error)], id; and their a* coroutines. Errors are the protocol's words
  (file_not_found, permission_denied, is_directory, invalid_path), per file: a batch succeeds in part.
- The OpenAI Agents SDK's sandbox sessions, as coroutines: exec(*command) -> ExecResult(stdout, stderr,
  exit_code), read(path) -> a binary file object, write(path, data), snapshot() and restore(snapshot), the
  workspace captured into a Checkpoint and restored into a new Sandbox that takes this one's place.

The Sandbox is created at the first call (or start()), and deleted by close() or the with block, with the
Checkpoints its snapshots are (keep_snapshots=True keeps them, for a later DocksideSandbox to restore).
Commands go through the data plane, as commands.run; record=True makes each an Execution instead
(Sandbox.run(record=True)), for an audit trail of what the agent ran."""

from __future__ import annotations

import asyncio
import io
import os
import posixpath
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from .aio import AsyncSandbox
from .checkpoint import Checkpoint
from .commandio import CommandResult
from .errors import ApiError, CommandTimeout, DeadlineExceeded
from .execution import Result
from .files import Data
from .sandbox import Sandbox

MAX_OUTPUT = 100_000  # characters of execute's output an agent gets back; more is cut and said so
# The bytes of each stream an Execution of record=True keeps: the most its spec.maxOutputBytes takes, the agent
# being free to keep less (its --max-exec-output-bytes).
MAX_RECORDED_OUTPUT = 262144


@dataclass
class ExecuteResponse:
    output: str  # stdout then stderr
    exit_code: Optional[int]  # None when the command did not end on its own (its timeout)
    truncated: bool = False


@dataclass
class FileUploadResponse:
    path: str
    error: Optional[str] = None


@dataclass
class FileDownloadResponse:
    path: str
    content: Optional[bytes] = None
    error: Optional[str] = None


@dataclass
class ExecResult:
    stdout: bytes
    stderr: bytes
    exit_code: Optional[int]

    def ok(self) -> bool:
        return self.exit_code == 0


class DocksideSandbox:
    """A session Sandbox of image with the limits given (cpus, memory_mb, pids_limit, workspace_mb, network;
    any other keyword argument of Sandbox too). Commands run in working_dir (/workspace); with record, each
    through an Execution, whose deadline poisons the Sandbox (execute and exec fail after it)."""

    def __init__(self, image: str, cpus: float = 2.0, memory_mb: int = 2048, pids_limit: int = 256,
                 workspace_mb: int = 512, network: str = "isolated", working_dir: str = "/workspace",
                 timeout: float = 1800, keep_snapshots: bool = False, record: bool = False,
                 **sandbox_kwargs: Any) -> None:
        self._make: Callable[[], Sandbox] = lambda: Sandbox(image, cpus=cpus, memory_mb=memory_mb,
                                                            pids_limit=pids_limit, workspace_mb=workspace_mb,
                                                            network=network, **sandbox_kwargs)
        self.working_dir, self.timeout = working_dir, timeout
        self.sandbox: Sandbox | None = None
        self.keep_snapshots, self.record = keep_snapshots, record
        self._snapshots: List[Checkpoint] = []

    # Lifecycle.

    def start(self) -> DocksideSandbox:
        self._started()
        return self

    def _started(self) -> Sandbox:
        """The Sandbox, created and started at the first call."""
        if self.sandbox is None:
            self.sandbox = self._make().start()
        return self.sandbox

    def close(self) -> None:
        """Deletes the Sandbox, and the Checkpoints snapshot() took unless keep_snapshots."""
        sbx, self.sandbox = self.sandbox, None
        if sbx is not None:
            sbx.delete()
        snapshots, self._snapshots = self._snapshots, []
        for ckpt in snapshots if not self.keep_snapshots else ():
            ckpt.delete()

    def __enter__(self) -> DocksideSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def id(self) -> str:
        return self._started().name

    # LangChain deep agents.

    def execute(self, command: str, timeout: float | None = None) -> ExecuteResponse:
        """Runs a shell command line; output is its stdout then its stderr, cut at MAX_OUTPUT characters."""
        sbx = self._started()
        limit = self.timeout if timeout is None else timeout
        try:
            if self.record:
                res, ended = commandresult(sbx.run(["sh", "-c", command], timeout=limit, working_dir=self.working_dir,
                                                   max_output_bytes=MAX_RECORDED_OUTPUT, record=True)), ""
            else:
                res, ended = sbx.commands.run(command, timeout=limit, cwd=self.working_dir), ""
        except (CommandTimeout, DeadlineExceeded) as exc:
            res, ended = commandresult(exc.result), f"\n[the command ran past its {limit}s timeout and was stopped]"
        output = res.stdout + res.stderr
        truncated = len(output) > MAX_OUTPUT
        if truncated:
            output = output[:MAX_OUTPUT] + f"\n[output cut at {MAX_OUTPUT} characters]"
        return ExecuteResponse(output + ended, res.exit_code, truncated)

    def upload_files(self, files: List[Tuple[str, bytes]]) -> List[FileUploadResponse]:
        """Writes each (absolute path, bytes), making its directory; one response per file, in order."""
        sbx = self._started()
        out = []
        for path, content in files:
            out.append(FileUploadResponse(path, file_error(path, lambda: write_file(sbx, path, content))))
        return out

    def download_files(self, paths: List[str]) -> List[FileDownloadResponse]:
        sbx = self._started()
        out = []
        for path in paths:
            got: Dict[str, bytes] = {}
            error = file_error(path, lambda: got.setdefault("data", sbx.files.read(path, format="bytes")))
            out.append(FileDownloadResponse(path, got.get("data"), error))
        return out

    async def aexecute(self, command: str, timeout: float | None = None) -> ExecuteResponse:
        return await asyncio.to_thread(self.execute, command, timeout)

    async def aupload_files(self, files: List[Tuple[str, bytes]]) -> List[FileUploadResponse]:
        return await asyncio.to_thread(self.upload_files, files)

    async def adownload_files(self, paths: List[str]) -> List[FileDownloadResponse]:
        return await asyncio.to_thread(self.download_files, paths)

    # OpenAI Agents SDK sandbox sessions.

    async def exec(self, *command: object, timeout: float | None = None, shell: bool = True) -> ExecResult:
        """command's words joined into a shell line (shell=True) or run as an argv."""
        cmd: str | List[str] = " ".join(str(c) for c in command) if shell else [str(c) for c in command]
        sbx = AsyncSandbox.wrap(await asyncio.to_thread(self._started))
        limit = self.timeout if timeout is None else timeout
        try:
            if self.record:
                argv: List[str] = ["sh", "-c", cmd] if isinstance(cmd, str) else cmd
                res = commandresult(await sbx.run(argv, timeout=limit, working_dir=self.working_dir,
                                                  max_output_bytes=MAX_RECORDED_OUTPUT, record=True))
            else:
                res = await sbx.commands.run(cmd, timeout=limit, cwd=self.working_dir)
        except (CommandTimeout, DeadlineExceeded) as exc:
            res = commandresult(exc.result)
        return ExecResult(res.stdout_bytes, res.stderr_bytes, res.exit_code)

    async def read(self, path: str) -> io.BytesIO:
        sbx = await asyncio.to_thread(self._started)
        return io.BytesIO(await asyncio.to_thread(lambda: sbx.files.read(self._abs(path), "bytes")))

    async def write(self, path: str, data: Data) -> None:
        """data: bytes, str, or a binary file object."""
        sbx = await asyncio.to_thread(self._started)
        await asyncio.to_thread(write_file, sbx, self._abs(path), data)

    async def snapshot(self) -> str:
        """The workspace captured into a Checkpoint; its name is the snapshot's reference."""
        sbx = await asyncio.to_thread(self._started)
        ckpt = await asyncio.to_thread(sbx.checkpoint)
        self._snapshots.append(ckpt)
        return ckpt.name

    async def restore(self, snapshot: str) -> None:
        """A new Sandbox of this one's spec with the workspace of Checkpoint snapshot takes this one's place;
        this one is deleted."""
        old = await asyncio.to_thread(self._started)
        name = f"{snapshot[:50]}-{os.urandom(2).hex()}"  # one snapshot may be restored more than once
        self.sandbox = await asyncio.to_thread(old.restore_into, name, snapshot)
        await asyncio.to_thread(old.delete)

    def _abs(self, path: object) -> str:
        return posixpath.join(self.working_dir, str(path))


def commandresult(res: CommandResult | Result) -> CommandResult:
    """res as a CommandResult: an Execution's Result (text) in bytes, its exit code None when it did not end on
    its own."""
    if isinstance(res, CommandResult):
        return res
    code = None if res.reason == "DeadlineExceeded" else res.exit_code
    return CommandResult(code, res.stdout.encode("utf-8"), res.stderr.encode("utf-8"))


def write_file(sbx: Sandbox, path: str, data: Data) -> None:
    parent = posixpath.dirname(path)
    if parent and parent != "/":
        sbx.files.make_dir(parent)
    sbx.files.write(path, data)


def file_error(path: str, action: Callable[[], object]) -> str | None:
    """None when action succeeds, else the file operation error deep agents know, in its words."""
    if not str(path).startswith("/"):
        return "invalid_path"
    try:
        action()
    except ApiError as exc:
        if exc.status == 404:
            return "file_not_found"
        if exc.status == 403:
            return "permission_denied"
        if "directory" in exc.message:
            return "is_directory"
        return "invalid_path" if exc.status == 400 else f"{exc.reason}: {exc.message}"
    return None
