"""sbx.run_code against the real interpreter server run as a local process behind a stub exec stream
(tests/stub.py ProcessSocket): state across calls, values and errors, streamed output, timeouts and interrupts
that keep the state, a session killed when its code does not stop, a missing module, cancel()."""

import threading
import time
import unittest
from unittest import mock

from dockside import CodeTimeout, DocksideError
from dockside import code as codemod
from tests.stub import ProcessSocket, StubApi, healthy_agent
from tests.test_sandbox import sandbox


def started(command=None):
    """A started Sandbox of a stub API whose execs run locally (command replaces the interpreter's argv)."""
    api = StubApi(healthy_agent)
    api.next_socket = lambda: ProcessSocket(command or api.calls[-1][3]["command"])
    return api, sandbox(api).start()


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class RunCodeTest(unittest.TestCase):
    def test_state_persists_and_results_carry_value_output_and_error(self):
        api, sbx = started()
        self.addCleanup(sbx.delete)
        first = sbx.run_code("import math\nx = 20\nprint('hi')\nmath.sqrt(4)")
        self.assertEqual((first.ok, first.stdout, first.value.repr, first.value.text), (True, "hi\n", "2.0", "2.0"))
        second = sbx.run_code("x + 1")
        self.assertEqual((second.value.repr, second.execution_count), ("21", 2))
        failed = sbx.run_code("undefined_name")
        self.assertFalse(failed.ok)
        self.assertEqual((failed.error.name, failed.error.value), ("NameError", "name 'undefined_name' is not defined"))
        self.assertIn('File "<cell 3>", line 1', str(failed.error))
        self.assertEqual([c[3]["command"] for c in api.calls if c[0] == "exec"],
                         [["python3", "-m", "dockside_interpreter"]], "one exec session for every call")

    def test_output_streams_to_the_callbacks_before_the_result(self):
        _, sbx = started()
        self.addCleanup(sbx.delete)
        seen = []
        res = sbx.run_code("import sys\nprint('a', flush=True)\nprint('b', file=sys.stderr)", on_stdout=seen.append,
                           on_stderr=lambda t: seen.append("err:" + t))
        self.assertEqual(seen, ["a\n", "err:b\n"])
        self.assertEqual((res.stdout, res.stderr), ("a\n", "b\n"))

    def test_a_timeout_interrupts_the_code_and_keeps_the_state(self):
        _, sbx = started()
        self.addCleanup(sbx.delete)
        sbx.run_code("kept = 'yes'")
        with self.assertRaises(CodeTimeout) as caught:
            sbx.run_code("import time\ntime.sleep(300)", timeout=0.5)
        self.assertEqual(caught.exception.result.error.name, "KeyboardInterrupt")
        self.assertEqual(sbx.run_code("kept").value.repr, "'yes'")

    def test_code_that_ignores_the_interrupt_has_its_session_killed_and_the_next_call_starts_anew(self):
        api, sbx = started()
        self.addCleanup(sbx.delete)
        sbx.run_code("kept = 1")
        pid = api.sockets[0].proc.pid
        stubborn = ("import time\nwhile True:\n    try:\n        time.sleep(300)\n"
                    "    except KeyboardInterrupt:\n        pass")
        with mock.patch.object(codemod, "INTERRUPT_GRACE", 1), self.assertRaises(CodeTimeout) as caught:
            sbx.run_code(stubborn, timeout=0.5)
        self.assertIsNone(caught.exception.result)
        self.assertIn("the session was killed", caught.exception.message)
        self.assertFalse(alive(pid), "the interpreter process is gone")
        self.assertEqual(sbx.run_code("'kept' in globals()").value.repr, "False")
        self.assertEqual(len(api.sockets), 2)

    def test_keyboard_interrupt_in_the_caller_interrupts_the_code(self):
        _, sbx = started()
        self.addCleanup(sbx.delete)
        interp = sbx.interpreter()
        self.addCleanup(interp.close)
        interp.run("n = 3")
        real_next = interp._next

        def interrupted_once(deadline):  # Ctrl-C while the client waits for the result
            interp._next = real_next
            raise KeyboardInterrupt
        interp._next = interrupted_once
        with self.assertRaises(KeyboardInterrupt):
            interp.run("import time\ntime.sleep(300)")
        self.assertEqual(interp.run("n").value.repr, "3", "the session went on")

    def test_cancel_from_another_thread_interrupts_the_code(self):
        _, sbx = started()
        self.addCleanup(sbx.delete)
        interp = sbx.interpreter()
        self.addCleanup(interp.close)
        interp.run("0")
        threading.Timer(0.5, interp.cancel).start()
        start = time.monotonic()
        with self.assertRaises(DocksideError) as caught:
            interp.run("import time\ntime.sleep(300)")
        self.assertEqual(caught.exception.reason, "Cancelled")
        self.assertLess(time.monotonic() - start, 120)
        self.assertEqual(caught.exception.result.error.name, "KeyboardInterrupt")

    def test_an_image_without_the_module_says_so(self):
        # -I leaves the working directory (the python image's folder, which holds the module) off the path: as an
        # image without it.
        _, sbx = started(["python3", "-I", "-m", "dockside_interpreter"])
        self.addCleanup(sbx.delete)
        with self.assertRaises(DocksideError) as caught:
            sbx.run_code("1")
        self.assertEqual(caught.exception.reason, "InterpreterMissing")
        self.assertIn("Sandbox team/py (image dockside.dev/python:local) has no dockside_interpreter module",
                      caught.exception.message)

    def test_a_command_that_cannot_start_says_what_it_printed(self):
        _, sbx = started(["sh", "-c", "echo 'exec: \"python3\": executable file not found'; exit 127"])
        self.addCleanup(sbx.delete)
        start = time.monotonic()
        with self.assertRaises(DocksideError) as caught:
            sbx.run_code("1")
        self.assertLess(time.monotonic() - start, codemod.START_SECONDS, "not after waiting for a first line")
        self.assertEqual(caught.exception.reason, "InterpreterNotStarted")
        self.assertIn('exit code 127): exec: "python3": executable file not found', caught.exception.message)

    def test_delete_ends_the_session(self):
        api, sbx = started()
        sbx.run_code("1")
        pid = api.sockets[0].proc.pid
        sbx.delete()
        self.assertFalse(alive(pid))


if __name__ == "__main__":
    unittest.main()
