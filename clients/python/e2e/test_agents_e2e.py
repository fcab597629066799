"""What agent frameworks use, against the real agent (run by test/e2e/python_client_test.go, as
test_client_e2e): the stateful interpreter in the python image, a terminal, cancellation that ends the remote
process, the DocksideSandbox provider's conformance, and a missing image failing the start in Dockside's words.
DOCKSIDE_PYTHON_IMAGE names another python image with the interpreter (one built with IMAGE_TAG)."""

import asyncio
import os
import signal
import threading
import time
import unittest

from dockside import AsyncSandbox, CodeTimeout, DocksideError, DocksideSandbox, Sandbox, SandboxFailed
from e2e.test_client_e2e import READY_SECONDS, wait_until
from tests.provider_conformance import check_provider

PYTHON = os.environ.get("DOCKSIDE_PYTHON_IMAGE") or "dockside.dev/python:local"

# How many processes run in the Sandbox whose command line holds every word of sys.argv[1:], from /proc.
COUNT = """
import os, sys
words = [w.encode() for w in sys.argv[1:]]
n = 0
for p in os.listdir('/proc'):
    try:
        cmdline = open('/proc/%s/cmdline' % p, 'rb').read().split(b'\\x00')
        n += all(w in cmdline for w in words) and os.getpid() != int(p)
    except (OSError, ValueError):
        pass
print(n)
"""


def count(sbx, *words):
    return int(sbx.commands.run(["python3", "-c", COUNT] + list(words), timeout=30).stdout)


def session(**kwargs):
    return Sandbox(PYTHON, cpus=1, memory_mb=512, workspace_mb=64, network="none", ready_timeout=READY_SECONDS,
                   **kwargs)


class InterpreterTest(unittest.TestCase):
    def test_run_code_keeps_state_streams_and_is_interrupted_by_a_timeout(self):
        with session() as sbx:
            res = sbx.run_code("import os, math\nx = 6\nprint(os.getcwd())\nx * 7")
            self.assertEqual((res.ok, res.stdout, res.value.repr), (True, "/workspace\n", "42"))
            self.assertEqual(sbx.run_code("x + math.floor(0.5)").value.text, "6")
            err = sbx.run_code("def f():\n    return 1 / 0\nf()").error
            self.assertEqual((err.name, err.value), ("ZeroDivisionError", "division by zero"))
            self.assertIn('File "<cell 3>", line 2, in f', str(err))
            seen = []
            res = sbx.run_code("import subprocess\nprint('py', flush=True)\nsubprocess.run(['echo', 'child'])",
                               on_stdout=seen.append)
            self.assertEqual(("".join(seen), res.stdout), ("py\nchild\n", "py\nchild\n"))

            with self.assertRaises(CodeTimeout) as caught:
                sbx.run_code("import time\ntime.sleep(300)", timeout=3)
            self.assertEqual(caught.exception.result.error.name, "KeyboardInterrupt")
            self.assertEqual(sbx.run_code("x").value.repr, "6", "the state outlived the interrupt")
            self.assertEqual(count(sbx, "python3", "-m", "dockside_interpreter"), 1)

            async def cancelled():
                asbx = AsyncSandbox.wrap(sbx)
                task = asyncio.ensure_future(asbx.run_code("import time\ntime.sleep(300)", timeout=None))
                await asyncio.sleep(3)
                task.cancel()
                await asyncio.wait([task])
                return (await asbx.run_code("x")).value.repr
            self.assertEqual(asyncio.run(cancelled()), "6", "an asyncio cancel interrupts too")

            with sbx.interpreter() as other:
                self.assertEqual(other.run("'x' in globals()").value.repr, "False", "a session of its own")
                self.assertEqual(count(sbx, "python3", "-m", "dockside_interpreter"), 2)
            wait_until(lambda: count(sbx, "python3", "-m", "dockside_interpreter") == 1)

    def test_an_image_without_python_says_so(self):
        with Sandbox("dockside.dev/busybox:local", ready_timeout=READY_SECONDS) as sbx:
            with self.assertRaises(DocksideError) as caught:
                sbx.run_code("1")
            self.assertEqual(caught.exception.reason, "InterpreterNotStarted")
            self.assertIn("image dockside.dev/busybox:local", caught.exception.message)


class TerminalAndCancelTest(unittest.TestCase):
    def test_a_terminal_runs_what_is_typed_at_its_size(self):
        with session() as sbx:
            out = []
            term = sbx.pty("sh", cols=100, rows=30, on_data=out.append)
            # Docker before API 1.42 sets an exec's terminal size only after the exec started, so a command
            # typed at once may run at 0x0: ask until the size has come. A resize travels apart from the
            # input, as in kubectl exec, so a line typed right after it may run at the old size: likewise.
            def sized(line, size):
                def asked():
                    term.send_input(line)
                    time.sleep(0.5)
                    return size in b"".join(out)
                return asked
            wait_until(sized("stty size; echo $TERM $((6 * 7))\n", b"30 100"))
            wait_until(lambda: b"xterm-256color 42" in b"".join(out))
            term.resize(120, 40)
            wait_until(sized("stty size\n", b"40 120"))
            term.send_input("exit 5\n")
            res = term.wait(timeout=60)
            text = b"".join(out).decode()
            self.assertEqual(res.exit_code, 5)
            self.assertIn("30 100", text)
            self.assertIn("40 120", text)

    def test_cancelling_an_awaited_command_ends_the_remote_process(self):
        with session() as sbx:
            async def cancelled():
                task = asyncio.ensure_future(AsyncSandbox.wrap(sbx).commands.run("exec sleep 301", timeout=None))
                await asyncio.sleep(1)
                wait_until(lambda: count(sbx, "sleep", "301") == 1)
                task.cancel()
                await asyncio.wait([task])
                return task.cancelled()
            self.assertTrue(asyncio.run(cancelled()))
            wait_until(lambda: count(sbx, "sleep", "301") == 0)

            # Ctrl-C: SIGINT to this (main) thread while it waits for the command.
            def ctrl_c():
                wait_until(lambda: count(sbx, "sleep", "302") == 1)
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            threading.Thread(target=ctrl_c, daemon=True).start()
            with self.assertRaises(KeyboardInterrupt):
                sbx.commands.run("exec sleep 302", timeout=None)
            wait_until(lambda: count(sbx, "sleep", "302") == 0)


class ProviderTest(unittest.TestCase):
    def test_docksidesandbox_conforms_on_the_real_agent(self):
        provider = DocksideSandbox(PYTHON, cpus=1, memory_mb=512, workspace_mb=64, network="none",
                                   ready_timeout=READY_SECONDS)
        with provider:
            check_provider(self, provider)
            # Files and commands see one workspace, restored with what it held at the snapshot.
            self.assertEqual(provider.execute("cat notes/n.txt; echo; ls up").output, "kept\na.txt\nb.txt\n")


class MissingImageTest(unittest.TestCase):
    def test_a_missing_image_fails_the_start_naming_it(self):
        sbx = Sandbox("dockside.dev/absent:local", image_pull_policy="Never", ready_timeout=600)
        with self.assertRaises(SandboxFailed) as caught:  # not WaitTimeout: the agent's verdict, before 600 s
            sbx.start()
        self.assertEqual(caught.exception.reason, "ImageNotPresent")
        self.assertIn("dockside.dev/absent:local", caught.exception.message)


if __name__ == "__main__":
    unittest.main()
