import asyncio
import io
import json
import os
import tempfile
import threading
import time
import unittest
from unittest import mock

from kubernetes import client
from urllib3.exceptions import MaxRetryError
from websocket import ABNF, WebSocketBadStatusException

from dockside import ApiError, AsyncSandbox, CommandTimeout, Sandbox
from dockside.api import Api
from tests.stub import Response, status_body
from tests.wsserver import ExecServer

BASE = "/apis/subresources.dockside.dev/v1alpha1/namespaces/team/sandboxes/py"


def api_client():
    cfg = client.Configuration()
    cfg.host = "https://127.0.0.1:6443"
    cfg.api_key = {"authorization": "abc"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(cfg)


class ExecWireTest(unittest.TestCase):
    def test_exec_opens_the_v5_channel_protocol_at_the_aggregated_path_with_the_token(self):
        ac = api_client()
        with mock.patch("kubernetes.stream.ws_client.create_websocket", return_value="sock") as create:
            self.assertEqual(Api(ac).exec("team", "py", ["python3", "-c", "print(1)"], stdin=False), "sock")
        cfg, url, headers = create.call_args.args
        self.assertIs(cfg, ac.configuration)  # its TLS settings and client certificate
        self.assertEqual(url, "wss://127.0.0.1:6443" + BASE + "/exec?command=python3&command=-c&command=print%281%29"
                         "&stdin=false&stdout=true&stderr=true&tty=false")
        self.assertRegex(headers.pop("traceparent"), r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")
        self.assertEqual(headers, {"authorization": "Bearer abc", "sec-websocket-protocol": "v5.channel.k8s.io"})

    def test_a_refused_exec_is_the_servers_status(self):
        ac = api_client()
        refusal = status_body(403, "Forbidden", 'sandboxes.subresources.dockside.dev "py" is forbidden: User "bob" '
                              'cannot create resource "sandboxes/exec"')
        ac.rest_client.pool_manager = mock.Mock()
        ac.rest_client.pool_manager.urlopen.return_value = Response(403, refusal)
        bad = WebSocketBadStatusException("Handshake status %d %s", 403, "Forbidden")
        with mock.patch("kubernetes.stream.ws_client.create_websocket", side_effect=bad):
            with self.assertRaises(ApiError) as caught:
                Api(ac).exec("team", "py", ["true"], stdin=True)
        self.assertEqual((caught.exception.reason, caught.exception.status), ("Forbidden", 403))
        self.assertEqual(caught.exception.message, refusal["message"])
        method, url = ac.rest_client.pool_manager.urlopen.call_args.args
        self.assertEqual((method, url.split("?")[0]), ("GET", "https://127.0.0.1:6443" + BASE + "/exec"))

    def test_an_unreachable_server_says_so(self):
        with mock.patch("kubernetes.stream.ws_client.create_websocket", side_effect=ConnectionRefusedError(111, "refused")):
            with self.assertRaisesRegex(ApiError, "ApiUnreachable: the exec stream could not be opened"):
                Api(api_client()).exec("team", "py", ["true"], stdin=False)


class TraceContextTest(unittest.TestCase):
    GIVEN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    def sent(self):
        ac = api_client()
        ac.rest_client.pool_manager = mock.Mock()
        ac.rest_client.pool_manager.urlopen.return_value = Response(200, b"{}")
        Api(ac).files("team", "py", "GET", [("op", "stat")])
        return ac.rest_client.pool_manager.urlopen.call_args.kwargs["headers"]["traceparent"]

    def test_each_call_is_a_new_trace_without_traceparent(self):
        with mock.patch.dict(os.environ, {"TRACEPARENT": ""}):
            first, second = self.sent(), self.sent()
        self.assertRegex(first, r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")
        self.assertNotEqual(first[3:35], second[3:35])

    def test_a_valid_traceparent_in_the_environment_is_the_parent(self):
        with mock.patch.dict(os.environ, {"TRACEPARENT": self.GIVEN}):
            self.assertEqual(self.sent(), self.GIVEN)

    def test_an_invalid_traceparent_is_replaced(self):
        for bad in ["garbage", "00-" + "0" * 32 + "-b7ad6b7169203331-01", self.GIVEN[:-1]]:
            with mock.patch.dict(os.environ, {"TRACEPARENT": bad}):
                self.assertRegex(self.sent(), r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")
                self.assertNotEqual(self.sent(), bad)


class FilesWireTest(unittest.TestCase):
    def setUp(self):
        self.ac = api_client()
        self.pool = self.ac.rest_client.pool_manager = mock.Mock()

    def test_a_request_goes_to_the_files_path_with_its_query_token_and_body(self):
        self.pool.urlopen.return_value = Response(201, {"name": "a b"})
        resp = Api(self.ac).files("team", "py", "PUT", [("path", "/workspace/a b"), ("mode", "0600")], body=b"xy",
                                  headers={"Content-Length": "2"}, timeout=30)
        self.assertEqual(json.loads(resp.read()), {"name": "a b"})
        (method, url), kwargs = self.pool.urlopen.call_args
        self.assertEqual((method, url), ("PUT", "https://127.0.0.1:6443" + BASE + "/files?path=%2Fworkspace%2Fa+b&mode=0600"))
        self.assertEqual(kwargs["body"], b"xy")
        headers = dict(kwargs["headers"])
        self.assertRegex(headers.pop("traceparent"), r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")
        self.assertEqual(headers, {"authorization": "Bearer abc", "Content-Length": "2"})
        self.assertEqual((kwargs["preload_content"], kwargs["timeout"]), (False, 30))

    def test_a_failure_is_the_agents_status(self):
        self.pool.urlopen.return_value = Response(507, status_body(507, "InsufficientStorage", "the workspace is full: 64MiB"))
        with self.assertRaises(ApiError) as caught:
            Api(self.ac).files("team", "py", "PUT", [("path", "/workspace/big")], body=b"x")
        self.assertEqual(str(caught.exception), "InsufficientStorage: the workspace is full: 64MiB")
        self.assertEqual(caught.exception.status, 507)
        self.assertTrue(self.pool.urlopen.return_value.released)

    def test_an_answer_that_is_not_a_status_is_still_said(self):
        self.pool.urlopen.return_value = Response(503, b"service unavailable")
        with self.assertRaisesRegex(ApiError, "HTTP 503: service unavailable"):
            Api(self.ac).files("team", "py", "GET", [("path", "/workspace/x")])

    def test_an_unreachable_server_says_so(self):
        self.pool.urlopen.side_effect = MaxRetryError(None, "/apis", "connection refused")
        with self.assertRaisesRegex(ApiError, "ApiUnreachable"):
            Api(self.ac).files("team", "py", "GET", [("path", "/workspace/x")])


if __name__ == "__main__":
    unittest.main()


class RealSocketTest(unittest.TestCase):
    """commands over real sockets and the real websocket-client, against tests/wsserver.py."""

    def sandbox(self, server):
        self.addCleanup(server.close)
        ac = api_client()
        ac.configuration.host = server.url
        return Sandbox(name="py", namespace="team", api=Api(ac))

    def test_stdin_streams_in_and_output_out_and_the_close_signal_ends_stdin(self):
        got = {}

        def cat(conn):
            data = b""
            while True:
                opcode, payload = conn.recv()
                if payload[:1] == b"\x00":
                    data += payload[1:]
                    conn.send(1, payload[1:])
                elif payload == b"\xff\x00":
                    got["stdin"] = data
                    conn.send(2, b"done\n")
                    conn.exit(7)
                    return

        server = ExecServer(cat)
        program = os.urandom(300_000)
        res = self.sandbox(server).commands.run(["cat"], stdin=program, timeout=60)
        self.assertEqual((res.exit_code, res.stdout_bytes, res.stderr), (7, program, "done\n"))
        self.assertEqual(got["stdin"], program)
        method, target, headers = server.requests[0]
        self.assertEqual((method, target), ("GET", BASE + "/exec?command=cat&stdin=true&stdout=true&stderr=true&tty=false"))
        self.assertEqual((headers["authorization"], headers["sec-websocket-protocol"], headers["upgrade"]),
                         ("Bearer abc", "v5.channel.k8s.io", "websocket"))

    def test_a_timeout_reaches_the_server_as_the_end_of_the_stream(self):
        seen = []

        def sleeper(conn):
            conn.send(1, b"started\n")
            while True:  # what the agent sees of the client until the connection ends
                opcode, payload = conn.recv()
                seen.append(opcode)
                if opcode is None:
                    return

        server = ExecServer(sleeper)
        with self.assertRaises(CommandTimeout) as caught:
            self.sandbox(server).commands.run("sleep 600", timeout=0.5)
        self.assertEqual(caught.exception.result.stdout, "started\n")
        self.assertTrue(server.done.wait(30), "the server's side of the stream never ended")
        self.assertEqual(seen, [ABNF.OPCODE_CLOSE, None])  # a close frame, then the connection shut

    def test_a_refused_upgrade_is_the_servers_status(self):
        body = json.dumps(status_body(409, "Conflict", 'Sandbox "py" is Paused: resume it first')).encode()
        server = ExecServer(refusal=(409, body))
        with self.assertRaisesRegex(ApiError, 'Conflict: Sandbox "py" is Paused: resume it first'):
            self.sandbox(server).commands.run("true")
        self.assertEqual([m for m, _, _ in server.requests], ["GET", "GET"])
        self.assertEqual(server.requests[1][2].get("upgrade"), None)  # the second one asks for the Status only


class AggregatorUnavailableTest(unittest.TestCase):
    """A call the API server's aggregator answered 503 "service unavailable" (nothing reached the agent) is
    sent again, a few times; the agent's own 503 is not."""

    sandbox = RealSocketTest.sandbox

    def setUp(self):
        patcher = mock.patch("dockside.dataplane.UNAVAILABLE_WAITS", (0.01, 0.01, 0.01, 0.01))
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_exec_files_and_a_plain_call_are_sent_again_until_they_pass(self):
        server = ExecServer(lambda conn: conn.exit(0), unavailable=2)
        self.assertEqual(self.sandbox(server).commands.run("true").exit_code, 0)
        self.assertEqual([h.get("upgrade") for _, _, h in server.requests], ["websocket"] * 3)

        def reader(conn):
            FilesTransferWireTest.answer(conn, {"kind": "Status", "status": "Success"}, [b"abc"])

        server = ExecServer(reader, unavailable=1)
        self.assertEqual(self.sandbox(server).files.read("/workspace/f", format="bytes"), b"abc")
        self.assertEqual(len(server.requests), 2)

        info = {"name": "f", "size": 2, "mode": "0644", "type": "file"}
        server = ExecServer(refusal=(201, json.dumps(info).encode()), unavailable=3)
        self.assertEqual(self.sandbox(server).files.write("/workspace/f", b"xy").size, 2)
        self.assertEqual([m for m, _, _ in server.requests], ["PUT"] * 4)

    def test_past_its_tries_the_call_says_why_clearly(self):
        for call in (lambda sbx: sbx.commands.run("true"), lambda sbx: sbx.files.stat("/workspace/f")):
            server = ExecServer(unavailable=100)
            with self.assertRaises(ApiError) as caught:
                call(self.sandbox(server))
            self.assertEqual(caught.exception.reason, "ServiceUnavailable")
            self.assertIn('aggregator answered "service unavailable" 5 times over 0.04s', caught.exception.message)
            self.assertEqual(len(server.requests), 5)

    def test_the_agents_own_503_is_not_sent_again(self):
        body = json.dumps(status_body(503, "ServiceUnavailable", "the node's Docker daemon is not reachable")).encode()
        server = ExecServer(refusal=(503, body))
        with self.assertRaisesRegex(ApiError, "ServiceUnavailable: the node's Docker daemon is not reachable"):
            self.sandbox(server).commands.run("true")
        self.assertEqual([h.get("upgrade") for _, _, h in server.requests], ["websocket", None])  # then the Status

    def test_a_plain_calls_file_body_is_not_sent_again(self):
        server = ExecServer(unavailable=100)
        with tempfile.TemporaryFile() as f:
            f.write(b"xy")
            f.seek(0)
            with self.assertRaisesRegex(ApiError, "HTTP 503: service unavailable"):
                self.sandbox(server).files.write("/workspace/f", f)  # read as it was sent
        self.assertEqual([m for m, _, _ in server.requests], ["PUT"])


class FilesTransferWireTest(unittest.TestCase):
    """sbx.files over an upgraded connection against a real socket: binary messages, "end", the outcome."""

    sandbox = RealSocketTest.sandbox

    @staticmethod
    def answer(conn, obj, data=()):
        for block in data:
            conn.sock.sendall(ABNF(1, 0, 0, 0, ABNF.OPCODE_BINARY, 0, block).format())
        conn.sock.sendall(ABNF(1, 0, 0, 0, ABNF.OPCODE_TEXT, 0, json.dumps(obj).encode()).format())

    def test_a_large_write_goes_in_binary_messages_ended_by_end(self):
        got, keys = [], set()

        def agent(conn):
            while True:
                opcode, payload = conn.recv()
                if opcode != ABNF.OPCODE_BINARY:
                    got.append(payload)
                    break
                got.append(payload)
                keys.add(conn.key)
            self.answer(conn, {"name": "big", "size": len(body), "mode": "0644", "type": "file"})

        body = os.urandom((3 << 20) + 5)  # a last message whose length is not a multiple of the mask's
        server = ExecServer(agent)
        info = self.sandbox(server).files.write("/workspace/big", body)
        self.assertEqual((info.path, info.size), ("/workspace/big", len(body)))
        self.assertEqual([len(p) for p in got[:-1]], [1 << 20, 1 << 20, 1 << 20, 5])
        self.assertEqual(b"".join(got[:-1]), body, "unmasked, the messages are the body")
        self.assertEqual(got[-1], b"end")
        self.assertEqual(len(keys), 4, "each message has its own masking key")
        method, target, headers = server.requests[0]
        self.assertEqual((method, target), ("GET", BASE + "/files?path=%2Fworkspace%2Fbig&length=3145733&method=PUT"))
        self.assertEqual(headers["sec-websocket-protocol"], "v1.files.dockside.dev")

    def test_a_read_is_whole_only_with_the_agents_success(self):
        server = ExecServer(lambda conn: self.answer(conn, {"kind": "Status", "status": "Success"}, [b"ab", b"c"]))
        self.assertEqual(self.sandbox(server).files.read("/workspace/f", format="bytes"), b"abc")
        failure = status_body(500, "InternalError", "the body broke off after 2 of its 3 bytes")
        server = ExecServer(lambda conn: self.answer(conn, failure, [b"ab"]))
        with self.assertRaisesRegex(ApiError, "InternalError: the body broke off after 2 of its 3 bytes"):
            self.sandbox(server).files.read("/workspace/f", format="bytes")
        server = ExecServer(lambda conn: conn.sock.sendall(ABNF(1, 0, 0, 0, ABNF.OPCODE_BINARY, 0, b"ab").format()))
        with self.assertRaisesRegex(ApiError, "BrokenOff"):
            self.sandbox(server).files.read("/workspace/f", format="bytes")

    def test_a_stalled_call_fails_clearly(self):
        def stall(conn):
            conn.sock.sendall(ABNF(1, 0, 0, 0, ABNF.OPCODE_BINARY, 0, b"ab").format())
            conn.recv()  # then nothing, until the client gives up

        server = ExecServer(stall)
        started = time.monotonic()
        with mock.patch("dockside.files.TIMEOUT", 0.5):
            with self.assertRaisesRegex(ApiError, r"Stalled: no byte moved for 0.5s: the files call was given up"):
                self.sandbox(server).files.read("/workspace/f", format="bytes")
        self.assertLess(time.monotonic() - started, 10)
        self.assertTrue(server.done.wait(10), "the connection ended")

    def test_an_upload_the_agent_stops_reading_fails_clearly(self):
        release = threading.Event()
        server = ExecServer(lambda conn: release.wait(30))  # reads nothing: the kernel's buffers fill up
        started = time.monotonic()
        try:
            with mock.patch("dockside.files.TIMEOUT", 0.5):
                with self.assertRaisesRegex(ApiError, r"Stalled: no byte moved for 0.5s: the files call was given up"):
                    self.sandbox(server).files.write("/workspace/big", bytes(64 << 20))
        finally:
            release.set()
        self.assertLess(time.monotonic() - started, 20)
        self.assertTrue(server.done.wait(10), "the connection ended")

    def test_an_interrupted_upload_shuts_its_connection_at_once(self):
        seen = []

        def agent(conn):
            while True:
                opcode, payload = conn.recv()
                seen.append(opcode)
                if opcode is None:
                    return

        class Interrupted(io.RawIOBase):
            """A local file whose second read is interrupted (Ctrl-C)."""
            reads = 0

            def readable(self):
                return True

            def readinto(self, buf):
                self.reads += 1
                if self.reads > 1:
                    raise KeyboardInterrupt
                buf[:] = b"x" * len(buf)
                return len(buf)

        server = ExecServer(agent)
        with self.assertRaises(KeyboardInterrupt):
            self.sandbox(server).files.write("/workspace/big", io.BufferedReader(Interrupted()))
        self.assertTrue(server.done.wait(5), "the agent's side ended at once")
        self.assertEqual(seen, [ABNF.OPCODE_BINARY, None], "one block, no end, then the connection shut")

    def test_cancelling_an_async_call_shuts_its_connection_at_once(self):
        def stall(conn):
            conn.recv()  # nothing is sent: only the client's going ends this

        server = ExecServer(stall)
        sbx = AsyncSandbox.wrap(self.sandbox(server))

        async def main():
            task = asyncio.ensure_future(sbx.files.read("/workspace/f", format="bytes"))
            while not server.requests:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)
            started = time.monotonic()
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            return time.monotonic() - started

        self.assertLess(asyncio.run(main()), 5, "not the 300 s of the call's timeout")
        self.assertTrue(server.done.wait(5))

    def test_a_refused_upgrade_is_the_servers_status(self):
        body = json.dumps(status_body(507, "InsufficientStorage", "/workspace/big (3MiB) is larger than the workspace: 1MiB")).encode()
        server = ExecServer(refusal=(507, body))
        with self.assertRaisesRegex(ApiError, r"InsufficientStorage: /workspace/big \(3MiB\) is larger"):
            self.sandbox(server).files.write("/workspace/big", os.urandom(3 << 20))
        self.assertEqual(server.requests[1][2].get("upgrade"), None)  # the second one asks for the Status only
