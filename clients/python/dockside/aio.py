"""asyncio variants. The Kubernetes Python client that Debian ships (python3-kubernetes) is synchronous, and
its asyncio counterpart (kubernetes_asyncio) is not packaged, so AsyncSandbox runs each blocking call of
Sandbox in a worker thread (asyncio.to_thread): an event loop stays free while a command runs or a Sandbox
starts. Cancelling an awaiting task does not stop the call in its thread: a command runs on until it ends or
its timeout, which the agent enforces from the host, kills it."""

import asyncio
import functools

from .sandbox import Sandbox


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

    async def run(self, command, **kwargs):
        return await self._call(self.sync.run, command, **kwargs)

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
