"""Cancelling an awaiting task stops what it runs in the Sandbox: the process of commands.run and of run is
gone (a local process behind the stub exec stream), run's Execution (record=True) is deleted, run_code's code
is interrupted and the session keeps its state."""

import asyncio
import os
import shutil
import tempfile
import time
import unittest

from dockside import AsyncSandbox
from tests.stub import ProcessSocket, StubApi, healthy_agent
from tests.test_code import alive


def async_sandbox():
    api = StubApi(healthy_agent)
    api.next_socket = lambda: ProcessSocket(api.calls[-1][3]["command"])
    return api, AsyncSandbox("dockside.dev/python:local", name="py", namespace="team", api=api, ready_timeout=5)


async def cancel_when(task, ready, timeout=60):
    """Cancels task once ready() is true, and waits until it has ended."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError("the call never got going")
        await asyncio.sleep(0.05)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return True
    return False


class AsyncCancelTest(unittest.TestCase):
    def test_cancelling_commands_run_ends_the_remote_process(self):
        api, asbx = async_sandbox()

        async def main():
            async with asbx as sbx:
                started = []
                task = asyncio.ensure_future(sbx.commands.run("echo up; exec sleep 300", timeout=None,
                                                              on_stdout=started.append))
                self.assertTrue(await cancel_when(task, lambda: started), "the cancel reached the caller")
                return api.sockets[0].proc

        proc = asyncio.run(main())
        self.assertIsNotNone(proc.poll(), "the command's process is gone")
        self.assertFalse(alive(proc.pid))

    def test_cancelling_run_ends_the_remote_process(self):
        api, asbx = async_sandbox()

        async def main():
            async with asbx as sbx:
                marker = os.path.join(tempfile.mkdtemp(prefix="dockside-aio-"), "up")
                self.addCleanup(shutil.rmtree, os.path.dirname(marker))
                task = asyncio.ensure_future(sbx.run(["sh", "-c", 'touch "$0"; exec sleep 300', marker], timeout=300))
                self.assertTrue(await cancel_when(task, lambda: os.path.exists(marker)))
                return api.sockets[0].proc

        proc = asyncio.run(main())
        self.assertIsNotNone(proc.poll(), "the command's process is gone")
        self.assertFalse(alive(proc.pid))
        self.assertEqual(api.verbs("executions"), [])

    def test_run_returns_its_result(self):
        _, asbx = async_sandbox()

        async def main():
            async with asbx as sbx:
                return await sbx.run(["sh", "-c", "read x; echo got $x"], stdin=b"it\n", timeout=60)

        res = asyncio.run(main())
        self.assertEqual((res.exit_code, res.stdout, res.reason), (0, "got it\n", "Completed"))

    def test_cancelling_a_recorded_run_deletes_the_execution(self):
        api, asbx = async_sandbox()

        async def main():
            async with asbx as sbx:
                task = asyncio.ensure_future(sbx.run(["sleep", "300"], timeout=300, record=True))
                self.assertTrue(await cancel_when(task, lambda: api.verbs("executions")))

        asyncio.run(main())
        verbs = api.verbs("executions")
        self.assertEqual([v for v, _ in verbs][:2], ["create", "delete"])
        self.assertEqual(api.objects.get(("executions", verbs[0][1])), None, "the Execution is gone")

    def test_cancelling_run_code_interrupts_the_code_and_keeps_the_session(self):
        api, asbx = async_sandbox()

        async def main():
            async with asbx as sbx:
                await sbx.run_code("kept = 42")
                started = []
                task = asyncio.ensure_future(sbx.run_code("import time\nprint('go', flush=True)\ntime.sleep(300)",
                                                          timeout=None, on_stdout=started.append))
                self.assertTrue(await cancel_when(task, lambda: started))
                return (await sbx.run_code("kept")).value.repr, len(api.sockets)

        self.assertEqual(asyncio.run(main()), ("42", 1), "the same session, its state kept")

    def test_commands_run_returns_its_result(self):
        _, asbx = async_sandbox()

        async def main():
            async with asbx as sbx:
                return await sbx.commands.run("read x; echo got $x", stdin="it\n", timeout=60)

        res = asyncio.run(main())
        self.assertEqual((res.exit_code, res.stdout), (0, "got it\n"))


if __name__ == "__main__":
    unittest.main()
