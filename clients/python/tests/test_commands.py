import json
import threading
import time
import unittest
from unittest import mock

from dockside import ApiError, CommandTimeout, DocksideError, WaitTimeout
from dockside.commandio import CHUNK
from dockside.commands import CommandHandle
from tests.stub import ExecSocket, StubApi, healthy_agent
from tests.test_sandbox import sandbox

STDOUT, STDERR = 1, 2


def agent_socket(script):
    """Makes the exec sockets of a test: script(sock) plays the agent's side on a thread of its own."""
    def make():
        sock = ExecSocket()
        threading.Thread(target=script, args=(sock,), daemon=True).start()
        return sock
    return make


def started(script=None):
    api = StubApi(healthy_agent)
    if script:
        api.next_socket = agent_socket(script)
    return api, sandbox(api).start()


class RunTest(unittest.TestCase):
    def test_output_streams_to_the_callbacks_and_the_exit_code_ends_it(self):
        def script(sock):
            sock.out(STDOUT, b"")  # the agent's "streams are up"
            sock.out(STDOUT, b"one\n")
            sock.out(STDERR, b"warn\n")
            sock.out(STDOUT, "tw\u00f6\n".encode()[:3])  # a character split between two messages
            sock.out(STDOUT, "tw\u00f6\n".encode()[3:])
            sock.exit(0)

        api, sbx = started(script)
        seen = []
        res = sbx.commands.run("echo one; echo warn >&2", on_stdout=lambda t: seen.append(("out", t)),
                               on_stderr=lambda t: seen.append(("err", t)))
        self.assertEqual((res.exit_code, res.stdout, res.stderr, res.ok), (0, "one\ntw\u00f6\n", "warn\n", True))
        self.assertEqual(seen, [("out", "one\n"), ("err", "warn\n"), ("out", "tw"), ("out", "\u00f6\n")])
        self.assertEqual(api.calls[-1], ("exec", "sandboxes", "py",
                                         {"command": ["sh", "-c", "echo one; echo warn >&2"], "stdin": False, "tty": False}))
        self.assertTrue(api.sockets[0].closed.is_set())

    def test_a_non_zero_exit_is_a_result(self):
        def script(sock):
            sock.out(STDERR, b"no such file\n")
            sock.exit(3)

        api, sbx = started(script)
        res = sbx.commands.run(["ls", "/nope"])
        self.assertEqual((res.exit_code, res.stderr, res.ok), (3, "no such file\n", False))
        self.assertEqual(api.calls[-1][3]["command"], ["ls", "/nope"])

    def test_stdin_of_any_size_is_sent_in_pieces_then_closed(self):
        program = ("x = 1\n" * 40000).encode()  # 240 KB: past what an Execution takes

        def cat(sock, message):
            if message[:1] == b"\x00":
                sock.out(STDOUT, message[1:])
            elif message == b"\xff\x00":
                sock.exit(0)

        api = StubApi(healthy_agent)
        api.next_socket = lambda: ExecSocket(cat)
        sbx = sandbox(api).start()
        res = sbx.commands.run(["cat"], stdin=program, timeout=30)
        self.assertEqual(res.stdout_bytes, program)
        data, closed = api.sockets[0].stdin()
        self.assertEqual((data, closed), (program, True))
        self.assertTrue(all(len(m) <= CHUNK + 1 for m in api.sockets[0].sent))
        self.assertTrue(api.calls[-1][3]["stdin"])

    def test_a_timeout_closes_the_stream_and_keeps_the_output(self):
        api, sbx = started(lambda sock: sock.out(STDOUT, b"started\n"))  # and never ends
        with self.assertRaises(CommandTimeout) as caught:
            sbx.commands.run("sleep 600", timeout=0.3)
        self.assertIsInstance(caught.exception, TimeoutError)
        self.assertEqual(caught.exception.result.stdout, "started\n")
        self.assertIsNone(caught.exception.result.exit_code)
        self.assertIn(b"CLOSE", api.sockets[0].sent)  # a close frame, then the connection shut
        self.assertTrue(api.sockets[0].closed.is_set())

    def test_an_interrupt_closes_the_stream(self):
        api, sbx = started(lambda sock: None)
        with mock.patch.object(CommandHandle, "wait", side_effect=KeyboardInterrupt):
            with self.assertRaises(KeyboardInterrupt):
                sbx.commands.run("sleep 600")
        self.assertTrue(api.sockets[0].closed.is_set())

    def test_a_callback_that_raises_ends_the_command_and_its_error_reaches_the_caller(self):
        def script(sock):
            sock.out(STDOUT, b"line\n")

        def fail(text):
            raise ValueError("stop here")

        api, sbx = started(script)
        with self.assertRaisesRegex(ValueError, "stop here"):
            sbx.commands.run("yes", on_stdout=fail)
        self.assertTrue(api.sockets[0].closed.is_set())

    def test_a_command_that_could_not_run_is_an_error_in_the_agents_words(self):
        def script(sock):
            sock.out(3, json.dumps({"status": "Failure", "reason": "InternalError",
                                    "message": "error executing command in container: nope: not found"}).encode())
            sock.incoming.put(None)

        _, sbx = started(script)
        with self.assertRaisesRegex(DocksideError, "InternalError: error executing command in container: nope"):
            sbx.commands.run(["nope"])

    def test_a_stream_cut_before_the_status_says_so(self):
        _, sbx = started(lambda sock: sock.incoming.put(None))
        with self.assertRaisesRegex(DocksideError, "StreamLost"):
            sbx.commands.run(["true"])

    def test_env_and_cwd_wrap_the_command(self):
        api, sbx = started(lambda sock: sock.exit(0))
        sbx.commands.run(["python3", "x.py"], env={"B": 2, "A": "x y"}, cwd="/workspace/my dir")
        self.assertEqual(api.calls[-1][3]["command"], [
            "env", "A=x y", "B=2", "sh", "-c", 'cd -- "$1" && shift && exec "$@"', "sh", "/workspace/my dir",
            "python3", "x.py"])
        with self.assertRaisesRegex(ValueError, "may not be empty or hold '='"):
            sbx.commands.run("true", env={"A=B": "1"})

    def test_an_empty_command_is_refused_before_anything_is_sent(self):
        api, sbx = started()
        with self.assertRaisesRegex(ValueError, "empty command"):
            sbx.commands.run([])
        self.assertEqual(api.sockets, [])


class BackgroundTest(unittest.TestCase):
    """background=True through the processes subresource: plain calls, each process a local one behind the
    stub (stub_processes.py), whose follow requests end after 0.3 s as the agent's end after 45 s."""

    def setUp(self):
        self.api = StubApi(healthy_agent)
        self.sbx = sandbox(self.api).start()
        self.addCleanup(lambda: self.api.process_table and self.api.process_table.kill_all())

    def test_a_handle_gives_its_output_so_far_takes_stdin_and_waits(self):
        h = self.sbx.commands.run('while read l; do echo "$l" | tr a-z A-Z; done', background=True,
                                  stdin="first\n")
        self.assertEqual(self.api.sockets, [], "no exec stream is held open")
        method, sub, params = self.api.process_calls[0]
        self.assertEqual((method, sub), ("POST", ""))
        self.assertEqual(params, [("command", "sh"), ("command", "-c"),
                                  ("command", 'while read l; do echo "$l" | tr a-z A-Z; done'), ("stdin", "true")])
        self.assertEqual(self.api.process_calls[1][:2], ("POST", f"/{h.id}/stdin"))
        h.send_stdin(b"second\n")
        self.assertTrue(h.running())
        with self.assertRaises(WaitTimeout) as caught:
            h.wait(timeout=0.5)  # it runs on
        self.assertIsNone(caught.exception.result.exit_code)
        wait_for(lambda: h.stdout == "FIRST\nSECOND\n")
        h.close_stdin()
        res = h.wait(timeout=30)
        self.assertEqual((res.exit_code, res.stdout), (0, "FIRST\nSECOND\n"))
        self.assertFalse(h.running())

    def test_kill_signals_its_group_and_wait_has_the_exit_code(self):
        h = self.sbx.commands.run('trap "echo term; exit 4" TERM; echo up; while :; do sleep 0.1; done',
                                  background=True)
        wait_for(lambda: h.stdout == "up\n")
        self.assertTrue(h.kill("TERM"))
        res = h.wait(timeout=30)
        self.assertEqual((res.exit_code, res.stdout), (4, "up\nterm\n"))
        self.assertFalse(h.kill(), "it had ended")
        self.assertIn(("POST", f"/{h.id}/signal", [("signal", "TERM")]), self.api.process_calls)

        h = self.sbx.commands.run("exec sleep 300", background=True)
        h.kill()
        self.assertEqual(h.wait(timeout=30).exit_code, 137, "SIGKILL, as Docker reports it")

    def test_callbacks_get_the_output_as_it_is_written_across_follow_requests(self):
        seen = {"out": [], "err": []}
        h = self.sbx.commands.run("echo one; sleep 1; echo two; echo warn >&2; printf 'tw\\303'; sleep 0.5; "
                                  "printf '\\266\\n'", background=True, on_stdout=seen["out"].append,
                                  on_stderr=seen["err"].append)
        wait_for(lambda: seen["out"] == ["one\n"])
        self.assertTrue(h.running(), "the first line came while it ran")
        res = h.wait(timeout=30)
        self.assertEqual((res.exit_code, "".join(seen["out"]), "".join(seen["err"])),
                         (0, "one\ntwo\ntw\u00f6\n", "warn\n"))
        self.assertTrue(all("\ufffd" not in t for t in seen["out"]), "never a split character")
        follows = [c for c in self.api.process_calls if c[1] == f"/{h.id}/stdout" and ("follow", "true") in c[2]]
        self.assertGreater(len(follows), 2, "the follow was asked again from where it got to")

    def test_a_callback_that_raises_kills_the_process_and_wait_raises_it(self):
        def fail(text):
            raise ValueError("stop here")

        h = self.sbx.commands.run("echo line; exec sleep 300", background=True, on_stdout=fail)
        with self.assertRaisesRegex(ValueError, "stop here"):
            h.wait(timeout=30)
        self.assertFalse(h.running())

    def test_a_process_is_found_again_by_its_id(self):
        h = self.sbx.commands.run("echo started; read x; echo got $x", background=True)
        wait_for(lambda: h.stdout == "started\n")
        again = sandbox(self.api).commands.connect(h.id)  # another client, knowing only the ID
        self.assertEqual(again.command, ["sh", "-c", "echo started; read x; echo got $x"])
        self.assertEqual([p["id"] for p in self.sbx.commands.list()], [h.id])
        again.send_stdin("it\n")
        self.assertEqual(again.wait(timeout=30).stdout, "started\ngot it\n")
        with self.assertRaises(ApiError) as caught:
            self.sbx.commands.connect("nope")
        self.assertEqual((caught.exception.status, caught.exception.reason), (404, "NotFound"))


def wait_for(cond, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        time.sleep(0.05)


if __name__ == "__main__":
    unittest.main()
