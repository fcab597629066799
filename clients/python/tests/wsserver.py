"""A WebSocket server of Kubernetes' channel protocol on loopback, for one connection at a time: the real
websocket-client and kernel sockets under the client, with the agent's side played by a test's script."""

import base64
import hashlib
import json
import socket
import struct
import threading

from websocket import ABNF

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Conn:
    """The server's end of one upgraded connection."""

    def __init__(self, sock):
        self.sock = sock
        self.key = None  # the masking key of the frame recv() read last

    def send(self, channel, data):
        self.sock.sendall(ABNF(1, 0, 0, 0, ABNF.OPCODE_BINARY, 0, bytes([channel]) + data).format())

    def exit(self, code):
        status = {"status": "Success"} if code == 0 else {
            "status": "Failure", "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        self.send(3, json.dumps(status).encode())
        self.sock.sendall(ABNF(1, 0, 0, 0, ABNF.OPCODE_CLOSE, 0, struct.pack("!H", 1000)).format())

    def recv(self):
        """(opcode, payload) of the client's next frame; (None, b"") once the connection is gone."""
        head = self._read(2)
        if head is None:
            return None, b""
        opcode, length = head[0] & 0x0F, head[1] & 0x7F
        if length == 126:
            length = struct.unpack("!H", self._read(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", self._read(8))[0]
        key = self.key = self._read(4)
        data = self._read(length) or b""
        return opcode, ABNF.mask(key, data)  # websocket-client's own unmasking, not the client's

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        return buf


class ExecServer:
    """Accepts connections on 127.0.0.1; requests[i] is the i-th request's (method, target, headers). The
    first `unavailable` requests get kube-apiserver's aggregator's 503 (http.Error's "service unavailable").
    A refusal (status, body) answers every other request with it instead of upgrading; else script(conn)
    runs."""

    def __init__(self, script=None, refusal=None, unavailable=0):
        self.script, self.refusal, self.unavailable = script, refusal, unavailable
        self.requests = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes accept(), which close() alone does not on Linux
        self.listener.close()
        self.thread.join(10)

    def _serve(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            with sock:
                self._one(sock)

    def _one(self, sock):
        raw = b""
        while b"\r\n\r\n" not in raw:
            chunk = sock.recv(4096)
            if not chunk:
                return
            raw += chunk
        lines = raw.split(b"\r\n\r\n")[0].decode().split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        self.requests.append((method, target, headers))
        if len(self.requests) <= self.unavailable:
            sock.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         b"X-Content-Type-Options: nosniff\r\nContent-Length: 20\r\nConnection: close\r\n\r\n"
                         b"service unavailable\n")
            return
        if self.refusal:
            code, body = self.refusal
            sock.sendall(b"HTTP/1.1 %d Refused\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (code, len(body), body))
            return
        accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + GUID).encode()).digest()).decode()
        sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n").encode())
        try:
            self.script(Conn(sock))
        finally:
            self.done.set()
