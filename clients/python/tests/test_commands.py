import json
import threading
import unittest
from unittest import mock

from dockside import CommandTimeout, DocksideError, WaitTimeout
from dockside.commands import CHUNK, CommandHandle
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
    def test_a_handle_gives_its_output_so_far_takes_stdin_and_waits(self):
        def echo(sock, message):
            if message[:1] == b"\x00":
                sock.out(STDOUT, message[1:].upper())
            elif message == b"\xff\x00":
                sock.exit(0)

        api = StubApi(healthy_agent)
        api.next_socket = lambda: ExecSocket(echo)
        h = sandbox(api).start().commands.run("tr a-z A-Z", background=True, stdin="first\n")
        self.assertTrue(api.calls[-1][3]["stdin"])  # open for send_stdin
        h.send_stdin(b"second\n")
        self.assertTrue(h.running())
        with self.assertRaises(WaitTimeout):
            h.wait(timeout=0.1)  # it runs on
        self.assertEqual(h.stdout, "FIRST\nSECOND\n")
        h.close_stdin()
        res = h.wait(timeout=10)
        self.assertEqual((res.exit_code, res.stdout), (0, "FIRST\nSECOND\n"))
        self.assertFalse(h.running())

    def test_kill_closes_the_stream_and_the_result_has_no_exit_code(self):
        api, sbx = started(lambda sock: sock.out(STDOUT, b"serving\n"))
        h = sbx.commands.run("python3 -m http.server", background=True)
        h.kill()
        self.assertTrue(api.sockets[0].closed.is_set())
        res = h.wait(timeout=10)
        self.assertIsNone(res.exit_code)
        with self.assertRaisesRegex(DocksideError, "CommandEnded"):
            h.send_stdin("late\n")


if __name__ == "__main__":
    unittest.main()
