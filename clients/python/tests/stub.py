"""An in-memory stand-in for dockside.api.Api: objects kept in a dict, and an agent of the test's own that
acts each time the client watches, as the real agent acts while the client waits; exec streams the test
drives frame by frame (ExecSocket), and the files subresource over a file tree in memory (StubFiles)."""

import copy
import io
import itertools
import json
import posixpath
import os
import queue
import subprocess
import sys
import tarfile
import threading
import time
import types

from websocket import ABNF, WebSocketConnectionClosedException

# The python image's folder, which holds the interpreter server (dockside_interpreter) that the image carries.
IMAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "hack", "images", "python")


class StubApi:
    def __init__(self, agent=None):
        self.objects = {}  # (plural, name) -> object
        self.calls = []  # (verb, plural, name, body), in order
        self.agent = agent or (lambda api, plural, obj: None)
        self._seq = itertools.count(1)
        self.sockets = []  # the exec streams opened, in order
        self.next_socket = ExecSocket  # makes the next one
        self.filesystem = StubFiles()
        self.requests = []  # (method, params, headers) of the files requests
        self.process_table = None  # the processes subresource, made at its first call
        self.process_calls = []  # (method, sub, params) of the processes requests

    def exec(self, namespace, name, argv, stdin, tty=False):
        self.calls.append(("exec", "sandboxes", name, {"command": argv, "stdin": stdin, "tty": tty}))
        sock = self.next_socket()
        self.sockets.append(sock)
        return sock

    def files(self, namespace, name, method, params, body=None, headers=None, timeout=None):
        self.requests.append((method, params, headers))
        resp = self.filesystem(method, params, body)
        if resp.status >= 400:  # as dataplane.Wire.request raises
            from dockside.dataplane import status_error
            raise status_error(resp.status, resp.read(), "")
        return resp

    def processes(self, namespace, name, method, sub, params, body=None, timeout=None):
        from tests.stub_processes import StubProcesses
        self.process_calls.append((method, sub, list(params)))
        if self.process_table is None:
            self.process_table = StubProcesses()
        resp = self.process_table(method, sub, params, body)
        if resp.status >= 400:  # as dataplane.Wire.request raises
            from dockside.dataplane import status_error
            raise status_error(resp.status, resp.read(), "")
        return resp

    def files_transfer(self, namespace, name, method, params, timeout):
        return StubTransfer(self, namespace, name, method, params)

    def _stamp(self, obj):
        obj["metadata"]["resourceVersion"] = str(next(self._seq))

    def get(self, namespace, plural, name):
        obj = self.objects.get((plural, name))
        return copy.deepcopy(obj) if obj else None

    def create(self, namespace, plural, body):
        obj = copy.deepcopy(body)
        meta = obj["metadata"]
        meta.setdefault("name", meta.get("generateName", "x-") + str(next(self._seq)))
        meta.update(namespace=namespace, uid=f"uid-{meta['name']}", generation=1)
        obj.setdefault("status", {"observedGeneration": 0})
        self._stamp(obj)
        self.objects[(plural, meta["name"])] = obj
        self.calls.append(("create", plural, meta["name"], body))
        return copy.deepcopy(obj)

    def patch(self, namespace, plural, name, body):
        obj = self.objects[(plural, name)]
        obj["spec"].update(body.get("spec", {}))
        obj["metadata"]["generation"] += 1
        self._stamp(obj)
        self.calls.append(("patch", plural, name, body))
        return copy.deepcopy(obj)

    def delete(self, namespace, plural, name, uid=None):
        self.calls.append(("delete", plural, name, uid))
        obj = self.objects.get((plural, name))
        if obj and (uid is None or obj["metadata"]["uid"] == uid):
            del self.objects[(plural, name)]

    def watch(self, namespace, plural, name, resource_version, seconds):
        obj = self.objects.get((plural, name))
        if obj is None:
            return
        before = copy.deepcopy(obj)
        self.agent(self, plural, obj)
        if (plural, name) not in self.objects:
            yield "DELETED", before
        elif obj != before:
            self._stamp(obj)
            yield "MODIFIED", copy.deepcopy(obj)
        else:
            time.sleep(0.01)  # nothing happened: the real watch would wait

    def verbs(self, plural):
        return [(verb, name) for verb, p, name, _ in self.calls if p == plural]


def set_condition(obj, kind, status, reason="", message=""):
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    conditions[:] = [c for c in conditions if c["type"] != kind]
    conditions.append({"type": kind, "status": status, "reason": reason, "message": message})


def observe(obj):
    obj["status"]["observedGeneration"] = obj["metadata"]["generation"]


def healthy_agent(api, plural, obj):
    """Starts, pauses and resumes Sandboxes as asked, at once; Executions and Checkpoints are left to tests."""
    if plural != "sandboxes":
        return
    observe(obj)
    is_paused = obj["spec"].get("lifecycle") == "Paused"
    set_condition(obj, "Paused", "True" if is_paused else "False", "Paused" if is_paused else "Running")
    set_condition(obj, "Ready", "False" if is_paused else "True", "Paused" if is_paused else "Running")
    obj["status"]["phase"] = "Paused" if is_paused else "Running"


class ExecSocket:
    """A websocket.WebSocket stand-in for one exec stream: the test queues frames as the agent sends them
    (out, exit); what the client sends is recorded in sent, and agent(sock, message) may answer it."""

    def __init__(self, agent=None):
        self.incoming = queue.Queue()
        self.sent = []
        self.agent = agent or (lambda sock, message: None)
        self.connected = True
        self.sock = self  # the raw socket, whose shutdown wakes the reader
        self.closed = threading.Event()

    def out(self, channel, data):
        self.incoming.put((ABNF.OPCODE_BINARY, bytes([channel]) + data))

    def exit(self, code):
        """The agent's end of a command: its Status on the error channel, then the close."""
        status = {"status": "Success"} if code == 0 else {
            "status": "Failure", "reason": "NonZeroExitCode", "message": f"command terminated with exit code {code}",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        self.out(3, json.dumps(status).encode())
        self.incoming.put((ABNF.OPCODE_CLOSE, b""))

    def recv_data_frame(self, control_frame=False):
        item = self.incoming.get()
        if item is None:
            raise WebSocketConnectionClosedException("socket is already closed.")
        return item[0], types.SimpleNamespace(data=item[1])

    def send(self, data, opcode=ABNF.OPCODE_TEXT):
        if not self.connected:
            raise WebSocketConnectionClosedException("socket is already closed.")
        self.sent.append(bytes(data))
        self.agent(self, bytes(data))

    def send_close(self):
        self.connected = False
        self.sent.append(b"CLOSE")

    def shutdown(self, how=None):
        self.connected = False
        self.incoming.put(None)
        self.closed.set()

    def stdin(self):
        """The bytes the client wrote to stdin, and whether it closed it."""
        data = b"".join(m[1:] for m in self.sent if m[:1] == b"\x00")
        return data, b"\xff\x00" in self.sent


class ProcessSocket(ExecSocket):
    """An exec stream whose far end is a local process running argv (python3 is this interpreter), started in
    the python image's folder, whose dockside_interpreter is then on the path as in the image: stdin, stdout, stderr and the exit status cross it as they cross the agent's, and closing
    the stream kills the process, as the agent ends an exec's processes when its stream is cut."""

    def __init__(self, argv):
        super().__init__()
        argv = [sys.executable if a == "python3" else a for a in argv]
        self.proc = subprocess.Popen(argv, cwd=IMAGE_DIR,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        pumps = [threading.Thread(target=self._pump, args=(f, ch), daemon=True)
                 for f, ch in ((self.proc.stdout, 1), (self.proc.stderr, 2))]
        for pump in pumps:
            pump.start()
        threading.Thread(target=self._exit, args=(pumps,), daemon=True).start()

    def _pump(self, stream, channel):
        for data in iter(lambda: stream.read1(1 << 16), b""):
            self.out(channel, data)

    def _exit(self, pumps):
        for pump in pumps:
            pump.join()
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.exit(self.proc.wait())

    def send(self, data, opcode=ABNF.OPCODE_TEXT):
        super().send(data, opcode)
        try:
            if data[:1] == b"\x00":
                self.proc.stdin.write(data[1:])
                self.proc.stdin.flush()
            elif data == b"\xff\x00":
                self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass  # the process ended, or its stdin is closed

    def shutdown(self, how=None):
        super().shutdown(how)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # what was buffered for a process that is gone


class Response(io.BytesIO):
    """An urllib3 response stand-in: status and a body to stream."""

    def __init__(self, status, body=b""):
        super().__init__(body if isinstance(body, bytes) else json.dumps(body).encode())
        self.status = status
        self.headers = {"Content-Type": "application/json"}
        self.released = False

    def stream(self, amt):
        while True:
            data = self.read(amt)
            if not data:
                return
            yield data

    def release_conn(self):
        self.released = True


class StubTransfer:
    """dataplane.Transfer over the stub's files(): an upload is handed over whole at end()."""

    def __init__(self, api, namespace, name, method, params):
        self._call = lambda body=None: api.files(namespace, name, method, params, body=body)
        self.sent = []

    def send(self, block):
        self.sent.append(bytes(block))

    def abort(self):
        self.aborted = True

    def end(self):
        return json.loads(self._call(b"".join(self.sent)).read())

    def blocks(self):
        resp = self._call()
        try:
            yield from resp.stream(1 << 20)
        finally:
            resp.release_conn()


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message}


class StubFiles:
    """The files subresource in memory, as docs/design/dataplane-files.md describes it: tree maps an absolute
    path to bytes (a file) or None (a directory); modes holds permission bits."""

    def __init__(self):
        self.tree = {"/": None, "/workspace": None}
        self.modes = {}

    def info(self, path):
        data = self.tree[path]
        return {"name": posixpath.basename(path) or "/", "size": len(data or b""), "type": "dir" if data is None else "file",
                "mode": "%04o" % self.modes.get(path, 0o755 if data is None else 0o644), "mtime": "2026-12-04T14:00:00Z"}

    def children(self, path):
        prefix = path.rstrip("/") + "/"
        return sorted(p for p in self.tree if p.startswith(prefix) and "/" not in p[len(prefix):] and p != prefix)

    def __call__(self, method, params, body):
        q = dict(params)
        path, op = q["path"], q.get("op", "")
        exists = path in self.tree
        if not exists and not (method == "PUT" or op == "mkdir"):
            return Response(404, status_body(404, "NotFound", f"{path} does not exist"))
        if method == "GET" and op == "":
            return Response(200, self.tree[path])
        if method == "GET" and op == "stat":
            return Response(200, self.info(path))
        if method == "GET" and op == "list":
            return Response(200, [self.info(c) for c in self.children(path)])
        if method == "GET" and op == "tar":
            out = io.BytesIO()
            with tarfile.open(fileobj=out, mode="w") as tar:
                for p in sorted(self.tree):
                    if p.startswith(path.rstrip("/") + "/"):
                        entry = tarfile.TarInfo("./" + p[len(path.rstrip("/")) + 1:])
                        data = self.tree[p]
                        entry.type = tarfile.DIRTYPE if data is None else tarfile.REGTYPE
                        entry.size, entry.mode = len(data or b""), int(self.info(p)["mode"], 8)
                        tar.addfile(entry, io.BytesIO(data) if data is not None else None)
            return Response(200, out.getvalue())
        data = body if isinstance(body, (bytes, type(None))) else body.read()
        if method == "PUT" and op == "":
            if path.startswith("/etc/"):
                return Response(403, status_body(403, "Forbidden", f"{path} is on the read-only root file system"))
            self.tree[path] = data
            self.modes[path] = int(q.get("mode", "0644"), 8)
            return Response(201, self.info(path))
        if method == "PUT" and op == "tar":
            with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
                for m in tar:
                    p = posixpath.normpath(posixpath.join(path, m.name))
                    self.tree[p] = tar.extractfile(m).read() if m.isfile() else None
                    self.modes[p] = m.mode
            return Response(200, self.info(path))
        if method == "POST" and op == "mkdir":
            if exists:
                return Response(200, self.info(path))
            self.tree[path] = None
            return Response(201, self.info(path))
        if method == "DELETE":
            if self.children(path) and q.get("recursive") != "true":
                return Response(409, status_body(409, "Conflict", f"{path} is a directory that is not empty"))
            for p in [p for p in self.tree if p == path or p.startswith(path + "/")]:
                del self.tree[p]
            return Response(204)
        return Response(405, status_body(405, "MethodNotAllowed", "not a files operation"))
