"""asyncio variants. The Kubernetes Python client that Debian ships (python3-kubernetes) is synchronous, and
its asyncio counterpart (kubernetes_asyncio) is not packaged, so AsyncSandbox runs each blocking call of
Sandbox in a worker thread (asyncio.to_thread): an event loop stays free while a command runs or a Sandbox
starts. A call that runs something in the Sandbox stops it when the awaiting task is cancelled: run and
commands.run close their exec stream (run with record=True deletes its Execution), run_code interrupts the
code (clients/python/README.md, "asyncio")."""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any, Callable, List, Literal, Mapping, Sequence, TypeVar, overload

from . import execution, fastpath
from .checkpoint import Checkpoint
from .code import CodeResult
from .commandio import CommandResult, Input, OnText
from .commands import Command, CommandHandle, Commands, finish
from .files import Data, FileInfo, Files, Stopper
from .processes import ProcessHandle
from .pty import Pty
from .sandbox import Sandbox

T = TypeVar("T")


async def stoppable(call: Callable[[], T], stop: Callable[[], object]) -> T:
    """call() in a worker thread. When the awaiting task is cancelled, stop() runs (in a thread too) to make
    call end soon, call is waited for, and the cancel goes on: no thread is left running the remote work."""
    task = asyncio.ensure_future(asyncio.to_thread(call))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.to_thread(stop)
        await asyncio.wait([task])
        if not task.cancelled():
            task.exception()  # the stop's doing (e.g. "deleted before it ended"), not the caller's: read and dropped
        raise


class StoppableRun:
    """One command of run on its exec stream, which stop() (from another thread) ends at any point: a stream
    open already is closed, one still opening is closed as soon as it is open."""

    def __init__(self, start: Callable[[], CommandHandle], collect: Callable[[CommandHandle], execution.Result]) -> None:
        self._start, self._collect = start, collect
        self._handles: List[CommandHandle] = []
        self._stopped = threading.Event()

    def call(self) -> execution.Result:
        handle = self._start()
        self._handles.append(handle)
        if self._stopped.is_set():  # stop() came while the stream opened: it did not see the handle
            handle.kill()
        return self._collect(handle)

    def stop(self) -> None:
        self._stopped.set()
        for handle in self._handles:
            handle.kill()


class AsyncSandbox:
    """Sandbox with awaitable methods: `async with AsyncSandbox(image, ...) as sbx: await sbx.run(...)`.
    Arguments are Sandbox's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._args, self._kwargs = args, kwargs
        self.sync: Sandbox | None = None  # the Sandbox, once started or wrapped

    @classmethod
    def wrap(cls, sandbox: Sandbox) -> AsyncSandbox:
        """The AsyncSandbox of a Sandbox object already made (e.g. one from restore_into)."""
        wrapped = cls()
        wrapped.sync = sandbox
        return wrapped

    async def start(self) -> AsyncSandbox:
        # Made in the thread too: loading the kubeconfig reads files and may run a credential plugin.
        sbx = await asyncio.to_thread(Sandbox, *self._args, **self._kwargs)
        self.sync = sbx
        await asyncio.to_thread(sbx.start)
        return self

    @property
    def _sbx(self) -> Sandbox:
        """The Sandbox, which a call needs started."""
        if self.sync is None:
            raise RuntimeError("the AsyncSandbox is not started: await start() or use async with")
        return self.sync

    async def __aenter__(self) -> AsyncSandbox:
        if self.sync is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.delete()

    async def run(self, command: Sequence[object], stdin: Input | None = None, timeout: float = 60,
                  env: Mapping[str, object] | None = None, working_dir: str | None = None,
                  max_output_bytes: int | None = None, keep: bool = False, record: bool = False) -> execution.Result:
        """Sandbox.run; cancelling closes the command's exec stream, which ends it, or with record=True deletes
        the Execution, which stops the command (and kills the Sandbox's container when it had started)."""
        sbx = self._sbx
        if not (record or keep):
            run = StoppableRun(
                functools.partial(fastpath.start, sbx._api, sbx.namespace, sbx.name, command, stdin, env, working_dir,
                                  max_output_bytes),
                functools.partial(fastpath.collect, sbx._api, sbx.namespace, sbx.name, timeout=timeout))
            return await stoppable(run.call, run.stop)
        name, uid = await asyncio.to_thread(execution.submit, sbx._api, sbx.namespace, sbx.name, command,
                                            execution.text_stdin(stdin), timeout, env, working_dir, max_output_bytes)
        return await stoppable(
            functools.partial(execution.collect, sbx._api, sbx.namespace, sbx.name, name, uid, timeout, keep),
            functools.partial(sbx._api.delete, sbx.namespace, execution.PLURAL, name, uid))

    @property
    def commands(self) -> AsyncCommands:
        return AsyncCommands(self._sbx.commands)

    @property
    def files(self) -> AsyncFiles:
        return AsyncFiles(self._sbx)

    async def run_code(self, code: str, timeout: float | None = 60, on_stdout: OnText | None = None,
                       on_stderr: OnText | None = None, max_output_bytes: int | None = None) -> CodeResult:
        """Sandbox.run_code; cancelling interrupts the code (the session keeps its state, or is killed when the
        code does not stop), as a timeout does."""
        sbx = self._sbx
        if sbx._interpreter is None:
            sbx._interpreter = sbx.interpreter()
        interp = sbx._interpreter
        return await stoppable(functools.partial(interp.run, code, timeout, on_stdout, on_stderr, max_output_bytes),
                               interp.cancel)

    async def pty(self, *args: Any, **kwargs: Any) -> Pty:
        """Sandbox.pty, opened in a thread; the Pty's methods do not block, but for wait (run it in a thread)."""
        return await self._call(self._sbx.pty, *args, **kwargs)

    async def pause(self, **kwargs: Any) -> None:
        await self._call(self._sbx.pause, **kwargs)

    async def resume(self, **kwargs: Any) -> None:
        await self._call(self._sbx.resume, **kwargs)

    async def checkpoint(self, **kwargs: Any) -> Checkpoint:
        return await self._call(self._sbx.checkpoint, **kwargs)

    async def restore_into(self, new_name: str, **kwargs: Any) -> AsyncSandbox:
        return AsyncSandbox.wrap(await self._call(self._sbx.restore_into, new_name, **kwargs))

    async def delete(self, **kwargs: Any) -> None:
        await self._call(self._sbx.delete, **kwargs)

    @staticmethod
    async def _call(method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(functools.partial(method, *args, **kwargs))


class AsyncCommands:
    """sbx.commands with an awaitable run: cancelling it closes the command's stream, which ends the command
    and what it started."""

    def __init__(self, commands: Commands) -> None:
        self._commands = commands

    @overload
    async def run(self, cmd: Command, stdin: Input | None = None, timeout: float | None = 60,
                  on_stdout: OnText | None = None, on_stderr: OnText | None = None, background: Literal[False] = False,
                  env: Mapping[str, object] | None = None, cwd: str | None = None) -> CommandResult: ...

    @overload
    async def run(self, cmd: Command, stdin: Input | None = None, timeout: float | None = 60,
                  on_stdout: OnText | None = None, on_stderr: OnText | None = None, *, background: Literal[True],
                  env: Mapping[str, object] | None = None, cwd: str | None = None) -> ProcessHandle: ...

    async def run(self, cmd: Command, stdin: Input | None = None, timeout: float | None = 60,
                  on_stdout: OnText | None = None, on_stderr: OnText | None = None, background: bool = False,
                  env: Mapping[str, object] | None = None, cwd: str | None = None) -> CommandResult | ProcessHandle:
        """Commands.run. background=True returns the ProcessHandle (its calls block: run them in a thread);
        the process runs on whatever becomes of the awaiting task."""
        if background:
            return await asyncio.to_thread(lambda: self._commands.run(cmd, stdin, timeout, on_stdout, on_stderr,
                                                                      background=True, env=env, cwd=cwd))
        handle = await asyncio.to_thread(self._commands.start, cmd, stdin, on_stdout, on_stderr, env, cwd)
        return await stoppable(functools.partial(finish, handle, timeout), handle.kill)


class AsyncFiles:
    """sbx.files with awaitable methods (Files'). Cancelling one shuts its upgraded connection at once (every
    read, every tar, every write past 1 MiB use one), which ends the call in the agent: a write leaves
    nothing, a tar upload the entries before that point. A small plain call (stat, list, remove, make_dir, a
    write of at most 1 MiB) runs to its end, seconds at most, before the cancel goes on."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sbx = sandbox

    @overload
    async def read(self, path: str, format: Literal["text"] = "text") -> str: ...

    @overload
    async def read(self, path: str, format: Literal["bytes"]) -> bytes: ...

    async def read(self, path: str, format: str = "text") -> str | bytes:
        if format == "stream":
            raise ValueError('format="stream" is not awaitable: read "bytes", or download() to a directory')
        return await self._call("read", path, format)

    async def write(self, path: str, data: Data, mode: int | None = None) -> FileInfo:
        return await self._call("write", path, data, mode)

    async def stat(self, path: str) -> FileInfo:
        return await self._call("stat", path)

    async def exists(self, path: str) -> bool:
        return await self._call("exists", path)

    async def list(self, path: str) -> List[FileInfo]:
        return await self._call("list", path)

    async def remove(self, path: str, recursive: bool = False) -> None:
        await self._call("remove", path, recursive)

    async def make_dir(self, path: str, parents: bool = True) -> bool:
        return await self._call("make_dir", path, parents)

    async def upload(self, local_dir: str, remote_dir: str) -> FileInfo:
        return await self._call("upload", local_dir, remote_dir)

    async def download(self, remote_dir: str, local_dir: str) -> List[str]:
        return await self._call("download", remote_dir, local_dir)

    async def _call(self, method: str, *args: Any) -> Any:
        stopper = Stopper()
        files = Files(self._sbx._api, self._sbx.namespace, self._sbx.name, stopper)
        return await stoppable(functools.partial(getattr(files, method), *args), stopper.stop)
