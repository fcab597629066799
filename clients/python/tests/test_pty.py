"""sbx.pty over the stub exec stream: a TTY asked for, the size sent first and on resize, typed input on
stdin, output to on_data as bytes, the exit code; and a real shell behind a local process."""

import json
import threading
import unittest

from tests.stub import ProcessSocket, StubApi, healthy_agent
from tests.test_commands import agent_socket
from tests.test_sandbox import sandbox


class PtyTest(unittest.TestCase):
    def test_size_input_and_output_cross_the_stream(self):
        typed = threading.Event()

        def script(sock):
            sock.agent = lambda s, message: typed.set() if message.startswith(b"\x00") else None
            typed.wait(30)
            sock.out(1, b"\x1b[1mhi\x1b[0m\r\n")
            sock.exit(0)

        api = StubApi(healthy_agent)
        api.next_socket = agent_socket(script)
        sbx = sandbox(api).start()
        seen = []
        term = sbx.pty(cols=120, rows=40, on_data=seen.append)
        term.resize(100, 30)
        term.send_input("echo hi\n")
        res = term.wait(timeout=30)
        call = [c for c in api.calls if c[0] == "exec"][0][3]
        self.assertEqual((call["tty"], call["stdin"]), (True, True))
        self.assertEqual(call["command"], ["env", "TERM=xterm-256color", "sh", "-c", "sh"])
        sent = api.sockets[0].sent
        self.assertEqual(sent[0], b"\x04" + json.dumps({"Width": 120, "Height": 40}).encode(), "the size goes first")
        self.assertEqual(sent[1], b"\x04" + json.dumps({"Width": 100, "Height": 30}).encode())
        self.assertEqual(sent[2], b"\x00echo hi\n")
        self.assertEqual((seen, res.exit_code, res.stdout), ([b"\x1b[1mhi\x1b[0m\r\n"], 0, "\x1b[1mhi\x1b[0m\r\n"))

    def test_a_shell_behind_it_runs_what_is_typed(self):
        api = StubApi(healthy_agent)
        api.next_socket = lambda: ProcessSocket(api.calls[-1][3]["command"])
        sbx = sandbox(api).start()
        term = sbx.pty(on_data=None)
        term.send_input("echo $TERM; exit 3\n")
        res = term.wait(timeout=30)
        self.assertEqual((res.exit_code, res.stdout), (3, "xterm-256color\n"))


if __name__ == "__main__":
    unittest.main()
