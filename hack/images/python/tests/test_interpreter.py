"""The interpreter server (dockside_interpreter) as a local process, driven through its protocol
(docs/design/interpreter.md): state across executions, values, errors, output from Python and from
subprocesses, stream messages, the output cap, interrupts, malformed requests, end of file."""

import json
import os
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)


class Server:
    """python3 -m dockside_interpreter in a process of its own; messages are read by a thread into a list."""

    def __init__(self, test):
        self.proc = subprocess.Popen([sys.executable, "-m", "dockside_interpreter"], cwd=SOURCE,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        test.addCleanup(self.stop)
        self.messages, self.cond = [], threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready = self.next()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except BrokenPipeError:
                pass  # stdin's buffer, flushed into a process that is gone

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.messages.append(json.loads(line))
                self.cond.notify_all()

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def next(self, timeout=30):
        with self.cond:
            if not self.cond.wait_for(lambda: self.messages, timeout):
                raise AssertionError(f"no message from the interpreter in {timeout}s")
            return self.messages.pop(0)

    def execute(self, code, **fields):
        self.send({"type": "execute", "id": code, "code": code, **fields})
        return self.next()


class InterpreterTest(unittest.TestCase):
    def test_ready_names_the_protocol(self):
        srv = Server(self)
        self.assertEqual((srv.ready["type"], srv.ready["protocol"]), ("ready", 1))
        self.assertEqual(srv.ready["pid"], srv.proc.pid)

    def test_variables_imports_and_functions_persist_and_the_last_expression_is_the_value(self):
        srv = Server(self)
        first = srv.execute("import math\nx = 6\ndef f(y):\n    return x * y\nprint('set')")
        self.assertEqual((first["status"], first["stdout"], first["value"], first["execution_count"]),
                         ("ok", "set\n", None, 1))
        second = srv.execute("f(7), math.floor(2.5)")
        self.assertEqual(second["value"], {"repr": "(42, 2)", "data": {"text/plain": "(42, 2)"}})
        self.assertEqual(srv.execute("_[0] + 1")["value"]["repr"], "43", "the last value is kept in _")
        self.assertIsNone(srv.execute("None")["value"], "None is no value, as in the REPL")

    def test_rich_reprs_follow_ipythons_display_methods(self):
        srv = Server(self)
        res = srv.execute("class T:\n    def _repr_html_(self): return '<b>t</b>'\n"
                          "    def _repr_png_(self): return b'\\x89PNG'\n    def __repr__(self): return 'T()'\nT()")
        self.assertEqual(res["value"], {"repr": "T()", "data": {"text/plain": "T()", "text/html": "<b>t</b>",
                                                                "image/png": "iVBORw=="}})

    def test_an_exception_is_a_structured_error_with_the_codes_frames_only(self):
        srv = Server(self)
        srv.execute("def boom():\n    return 1 / 0")
        res = srv.execute("x = 1\nboom()")
        self.assertEqual(res["status"], "error")
        err = res["error"]
        self.assertEqual((err["name"], err["value"]), ("ZeroDivisionError", "division by zero"))
        text = "".join(err["traceback"])
        self.assertTrue(text.startswith("Traceback (most recent call last):\n"), text)
        self.assertIn('File "<cell 2>", line 2, in <module>', text)
        self.assertIn('File "<cell 1>", line 2, in boom\n    return 1 / 0', text)
        self.assertNotIn("dockside_interpreter", text)
        self.assertEqual(srv.execute("x")["value"]["repr"], "1", "statements before the error ran")

    def test_a_syntax_error_has_its_place_and_no_frames(self):
        srv = Server(self)
        err = srv.execute("def f(:\n")["error"]
        self.assertEqual(err["name"], "SyntaxError")
        self.assertEqual(err["traceback"][0], '  File "<cell 1>", line 1\n')

    def test_exit_and_keyboard_interrupt_raised_by_the_code_leave_the_session_running(self):
        srv = Server(self)
        srv.execute("kept = 5")
        self.assertEqual(srv.execute("import sys; sys.exit(3)")["error"]["name"], "SystemExit")
        self.assertEqual(srv.execute("raise KeyboardInterrupt")["error"]["name"], "KeyboardInterrupt")
        self.assertEqual(srv.execute("kept")["value"]["repr"], "5")

    def test_output_of_subprocesses_lands_in_the_execution_and_stdin_is_empty(self):
        srv = Server(self)
        res = srv.execute("import os, subprocess\nprint('py')\nos.system('echo sh; echo err >&2')\n"
                          "subprocess.run(['sh', '-c', 'echo child'])\nimport sys; print('late', file=sys.stderr)")
        self.assertEqual((res["stdout"], res["stderr"]), ("py\nsh\nchild\n", "err\nlate\n"))
        self.assertEqual(srv.execute("input()")["error"]["name"], "EOFError")

    def test_stream_messages_come_before_the_result_and_join_to_its_output(self):
        srv = Server(self)
        srv.send({"type": "execute", "id": 7, "stream": True,
                  "code": "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.05)"})
        streamed = []
        while True:
            msg = srv.next()
            if msg["type"] == "result":
                break
            self.assertEqual((msg["type"], msg["id"], msg["name"]), ("stream", 7, "stdout"))
            streamed.append(msg["text"])
        self.assertEqual(("".join(streamed), msg["stdout"], msg["id"]), ("0\n1\n2\n", "0\n1\n2\n", 7))

    def test_output_past_the_cap_is_counted_and_the_value_cut(self):
        srv = Server(self)
        res = srv.execute("print('y' * 100)\n'z' * 50", max_output_bytes=10)
        self.assertEqual((res["stdout"], res["stdout_truncated_bytes"]), ("y" * 10, 91))
        self.assertEqual(res["value"]["repr"], "'zzzzzzzzz... [42 more characters]")

    def test_an_interrupt_stops_a_sleep_and_a_child_and_keeps_the_state(self):
        srv = Server(self)
        srv.execute("state = 'kept'")
        for code in ("import time\nprint('started', flush=True)\ntime.sleep(300)",
                     "import subprocess\nprint('started', flush=True)\nsubprocess.run(['sleep', '300'])"):
            srv.send({"type": "execute", "id": code, "code": code, "stream": True})
            self.assertEqual(srv.next()["text"], "started\n")
            start = time.monotonic()
            srv.send({"type": "interrupt"})
            res = srv.next()
            self.assertLess(time.monotonic() - start, 60, "the interrupt ended the code, not its own end")
            self.assertEqual((res["type"], res["error"]["name"]), ("result", "KeyboardInterrupt"))
        srv.send({"type": "interrupt"})  # nothing runs: ignored
        self.assertEqual(srv.execute("state")["value"]["repr"], "'kept'")

    def test_an_interrupt_right_behind_its_execute_stops_it_and_only_it(self):
        srv = Server(self)
        for _ in range(5):
            # Right after the previous result, in one write: the server may read the interrupt before its main
            # thread is done with the previous execution, and before it starts this one.
            self.assertEqual(srv.execute("1")["status"], "ok")
            srv.proc.stdin.write(json.dumps({"type": "execute", "id": 1, "code": "import time\ntime.sleep(300)"})
                                 .encode() + b"\n" + json.dumps({"type": "interrupt"}).encode() + b"\n")
            srv.proc.stdin.flush()
            self.assertEqual(srv.next()["error"]["name"], "KeyboardInterrupt")
        self.assertEqual(srv.execute("import time; time.sleep(0.3); 'not interrupted'")["value"]["repr"],
                         "'not interrupted'")

    def test_malformed_requests_are_answered_with_errors_and_the_server_goes_on(self):
        srv = Server(self)
        srv.proc.stdin.write(b"not json\n")
        srv.proc.stdin.flush()
        self.assertEqual(srv.next()["id"], None)
        srv.send({"type": "bogus", "id": "b"})
        self.assertEqual((srv.next()["type"], srv.messages), ("error", []))
        srv.send({"type": "execute", "id": "n"})
        self.assertIn("needs code", srv.next()["message"])
        self.assertEqual(srv.execute("2 + 2")["value"]["repr"], "4")

    def test_end_of_file_ends_the_server_after_the_queued_executions(self):
        srv = Server(self)
        srv.send({"type": "execute", "id": 1, "code": "import time; time.sleep(0.2); 1"})
        srv.send({"type": "execute", "id": 2, "code": "2"})
        srv.proc.stdin.close()
        self.assertEqual([srv.next()["id"], srv.next()["id"]], [1, 2])
        self.assertEqual(srv.proc.wait(timeout=30), 0)


if __name__ == "__main__":
    unittest.main()
