"""asyncio variants. The Kubernetes Python client that Debian ships (python3-kubernetes) is synchronous, and
its asyncio counterpart (kubernetes_asyncio) is not packaged, so AsyncSandbox runs each blocking call of
Sandbox in a worker thread (asyncio.to_thread): an event loop stays free while a command runs or a Sandbox
starts. A call that runs something in the Sandbox stops it when the awaiting task is cancelled: run deletes
its Execution, commands.run closes its exec stream, run_code interrupts the code (clients/python/README.md,
"asyncio")."""

import asyncio
import functools

from . import execution
from .commands import finish
from .files import Files, Stopper
from .sandbox import Sandbox


async def stoppable(call, stop):
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


class AsyncSandbox:
    """Sandbox with awaitable methods: `async with AsyncSandbox(image, ...) as sbx: await sbx.run(...)`.
    Arguments are Sandbox's."""

    def __init__(self, *args, **kwargs):
        self._args, self._kwargs = args, kwargs
        self.sync = None

    @classmethod
    def wrap(cls, sandbox):
        """The AsyncSandbox of a Sandbox object already made (e.g. one from restore_into)."""
        wrapped = cls()
        wrapped.sync = sandbox
        return wrapped

    async def start(self):
        # Made in the thread too: loading the kubeconfig reads files and may run a credential plugin.
        self.sync = await asyncio.to_thread(Sandbox, *self._args, **self._kwargs)
        await asyncio.to_thread(self.sync.start)
        return self

    async def __aenter__(self):
        if self.sync is None:
            await self.start()
        return self

    async def __aexit__(self, *exc):
        await self.delete()

    async def run(self, command, stdin=None, timeout=60, env=None, working_dir=None, max_output_bytes=None,
                  keep=False):
        """Sandbox.run; cancelling deletes the Execution, which stops the command."""
        sbx = self.sync
        name, uid = await asyncio.to_thread(execution.submit, sbx._api, sbx.namespace, sbx.name, command, stdin,
                                            timeout, env, working_dir, max_output_bytes)
        return await stoppable(
            functools.partial(execution.collect, sbx._api, sbx.namespace, sbx.name, name, uid, timeout, keep),
            functools.partial(sbx._api.delete, sbx.namespace, execution.PLURAL, name, uid))

    @property
    def commands(self):
        return AsyncCommands(self.sync.commands)

    @property
    def files(self):
        return AsyncFiles(self.sync)

    async def run_code(self, code, timeout=60, on_stdout=None, on_stderr=None, max_output_bytes=None):
        """Sandbox.run_code; cancelling interrupts the code (the session keeps its state, or is killed when the
        code does not stop), as a timeout does."""
        if self.sync._interpreter is None:
            self.sync._interpreter = self.sync.interpreter()
        interp = self.sync._interpreter
        return await stoppable(functools.partial(interp.run, code, timeout, on_stdout, on_stderr, max_output_bytes),
                               interp.cancel)

    async def pty(self, *args, **kwargs):
        """Sandbox.pty, opened in a thread; the Pty's methods do not block, but for wait (run it in a thread)."""
        return await self._call(self.sync.pty, *args, **kwargs)

    async def pause(self, **kwargs):
        return await self._call(self.sync.pause, **kwargs)

    async def resume(self, **kwargs):
        return await self._call(self.sync.resume, **kwargs)

    async def checkpoint(self, **kwargs):
        return await self._call(self.sync.checkpoint, **kwargs)

    async def restore_into(self, new_name, **kwargs):
        return AsyncSandbox.wrap(await self._call(self.sync.restore_into, new_name, **kwargs))

    async def delete(self, **kwargs):
        return await self._call(self.sync.delete, **kwargs)

    @staticmethod
    async def _call(method, *args, **kwargs):
        return await asyncio.to_thread(functools.partial(method, *args, **kwargs))


class AsyncCommands:
    """sbx.commands with an awaitable run: cancelling it closes the command's stream, which ends the command
    and what it started."""

    def __init__(self, commands):
        self._commands = commands

    async def run(self, cmd, stdin=None, timeout=60, on_stdout=None, on_stderr=None, background=False, env=None,
                  cwd=None):
        """Commands.run. background=True returns the ProcessHandle (its calls block: run them in a thread);
        the process runs on whatever becomes of the awaiting task."""
        if background:
            return await asyncio.to_thread(self._commands.run, cmd, stdin, timeout, on_stdout, on_stderr, True, env,
                                           cwd)
        handle = await asyncio.to_thread(self._commands.start, cmd, stdin, on_stdout, on_stderr, env, cwd)
        return await stoppable(functools.partial(finish, handle, timeout), handle.kill)


class AsyncFiles:
    """sbx.files with awaitable methods (Files'). Cancelling one shuts its upgraded connection at once (every
    read, every tar, every write past 1 MiB use one), which ends the call in the agent: a write leaves
    nothing, a tar upload the entries before that point. A small plain call (stat, list, remove, make_dir, a
    write of at most 1 MiB) runs to its end, seconds at most, before the cancel goes on."""

    def __init__(self, sandbox):
        self._sbx = sandbox

    async def read(self, path, format="text"):
        if format == "stream":
            raise ValueError('format="stream" is not awaitable: read "bytes", or download() to a directory')
        return await self._call("read", path, format)

    async def write(self, path, data, mode=None):
        return await self._call("write", path, data, mode)

    async def stat(self, path):
        return await self._call("stat", path)

    async def exists(self, path):
        return await self._call("exists", path)

    async def list(self, path):
        return await self._call("list", path)

    async def remove(self, path, recursive=False):
        return await self._call("remove", path, recursive)

    async def make_dir(self, path, parents=True):
        return await self._call("make_dir", path, parents)

    async def upload(self, local_dir, remote_dir):
        return await self._call("upload", local_dir, remote_dir)

    async def download(self, remote_dir, local_dir):
        return await self._call("download", remote_dir, local_dir)

    async def _call(self, method, *args):
        stopper = Stopper()
        files = Files(self._sbx._api, self._sbx.namespace, self._sbx.name, stopper)
        return await stoppable(functools.partial(getattr(files, method), *args), stopper.stop)
