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
Checkpoints its snapshots are (keep_snapshots=True keeps them, for a later DocksideSandbox to restore)."""

import asyncio
import io
import os
import posixpath
import types
from dataclasses import dataclass
from typing import List, Optional, Tuple

from .aio import AsyncSandbox
from .errors import ApiError, CommandTimeout
from .sandbox import Sandbox

MAX_OUTPUT = 100_000  # characters of execute's output an agent gets back; more is cut and said so


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

    def ok(self):
        return self.exit_code == 0


class DocksideSandbox:
    """A session Sandbox of image with the limits given (cpus, memory_mb, pids_limit, workspace_mb, network;
    any other keyword argument of Sandbox too). Commands run in working_dir (/workspace)."""

    def __init__(self, image, cpus=2.0, memory_mb=2048, pids_limit=256, workspace_mb=512, network="isolated",
                 working_dir="/workspace", timeout=1800, keep_snapshots=False, **sandbox_kwargs):
        self._make = lambda: Sandbox(image, cpus=cpus, memory_mb=memory_mb, pids_limit=pids_limit,
                                     workspace_mb=workspace_mb, network=network, **sandbox_kwargs)
        self.working_dir, self.timeout = working_dir, timeout
        self.sandbox = None
        self.keep_snapshots, self._snapshots = keep_snapshots, []

    # Lifecycle.

    def start(self):
        if self.sandbox is None:
            self.sandbox = self._make().start()
        return self

    def close(self):
        """Deletes the Sandbox, and the Checkpoints snapshot() took unless keep_snapshots."""
        sbx, self.sandbox = self.sandbox, None
        if sbx is not None:
            sbx.delete()
        snapshots, self._snapshots = self._snapshots, []
        for ckpt in snapshots if not self.keep_snapshots else ():
            ckpt.delete()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    @property
    def id(self):
        return self.start().sandbox.name

    # LangChain deep agents.

    def execute(self, command, timeout=None):
        """Runs a shell command line; output is its stdout then its stderr, cut at MAX_OUTPUT characters."""
        sbx = self.start().sandbox
        limit = self.timeout if timeout is None else timeout
        try:
            res, ended = sbx.commands.run(command, timeout=limit, cwd=self.working_dir), ""
        except CommandTimeout as exc:
            res, ended = exc.result, f"\n[the command ran past its {limit}s timeout and was stopped]"
        output = res.stdout + res.stderr
        truncated = len(output) > MAX_OUTPUT
        if truncated:
            output = output[:MAX_OUTPUT] + f"\n[output cut at {MAX_OUTPUT} characters]"
        return ExecuteResponse(output + ended, res.exit_code, truncated)

    def upload_files(self, files: List[Tuple[str, bytes]]):
        """Writes each (absolute path, bytes), making its directory; one response per file, in order."""
        sbx = self.start().sandbox
        out = []
        for path, content in files:
            out.append(FileUploadResponse(path, file_error(path, lambda: write_file(sbx, path, content))))
        return out

    def download_files(self, paths: List[str]):
        sbx = self.start().sandbox
        out = []
        for path in paths:
            got = {}
            error = file_error(path, lambda: got.setdefault("data", sbx.files.read(path, format="bytes")))
            out.append(FileDownloadResponse(path, got.get("data"), error))
        return out

    async def aexecute(self, command, timeout=None):
        return await asyncio.to_thread(self.execute, command, timeout)

    async def aupload_files(self, files):
        return await asyncio.to_thread(self.upload_files, files)

    async def adownload_files(self, paths):
        return await asyncio.to_thread(self.download_files, paths)

    # OpenAI Agents SDK sandbox sessions.

    async def exec(self, *command, timeout=None, shell=True):
        """command's words joined into a shell line (shell=True) or run as an argv."""
        cmd = " ".join(str(c) for c in command) if shell else [str(c) for c in command]
        sbx = (await asyncio.to_thread(self.start)).sandbox
        try:
            res = await AsyncSandbox.wrap(sbx).commands.run(cmd, timeout=self.timeout if timeout is None else timeout,
                                                            cwd=self.working_dir)
        except CommandTimeout as exc:
            res = exc.result
        return ExecResult(res.stdout_bytes, res.stderr_bytes, res.exit_code)

    async def read(self, path):
        sbx = (await asyncio.to_thread(self.start)).sandbox
        return io.BytesIO(await asyncio.to_thread(sbx.files.read, self._abs(path), "bytes"))

    async def write(self, path, data):
        """data: bytes, str, or a binary file object."""
        sbx = (await asyncio.to_thread(self.start)).sandbox
        await asyncio.to_thread(write_file, sbx, self._abs(path), data)

    async def snapshot(self):
        """The workspace captured into a Checkpoint; its name is the snapshot's reference."""
        sbx = (await asyncio.to_thread(self.start)).sandbox
        ckpt = await asyncio.to_thread(sbx.checkpoint)
        self._snapshots.append(ckpt)
        return ckpt.name

    async def restore(self, snapshot):
        """A new Sandbox of this one's spec with the workspace of Checkpoint snapshot takes this one's place;
        this one is deleted."""
        old = (await asyncio.to_thread(self.start)).sandbox
        name = f"{snapshot[:50]}-{os.urandom(2).hex()}"  # one snapshot may be restored more than once
        self.sandbox = await asyncio.to_thread(old.restore_into, name, types.SimpleNamespace(name=snapshot))
        await asyncio.to_thread(old.delete)

    def _abs(self, path):
        return posixpath.join(self.working_dir, str(path))


def write_file(sbx, path, data):
    parent = posixpath.dirname(path)
    if parent and parent != "/":
        sbx.files.make_dir(parent)
    sbx.files.write(path, data)


def file_error(path, action):
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
