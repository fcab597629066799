"""The processes subresource in memory, as docs/design/dataplane.md ("Signals and background processes")
describes it, each process a local one (sh is this machine's) in a session of its own: its output kept,
followed for at most FOLLOW seconds per request (the agent's 45 s, short here so that clients ask again), its
process group signalled, 409 once it ended."""

import os
import signal
import subprocess
import threading
import time

from tests.stub import Response, status_body

FOLLOW = 0.3  # seconds a follow request is answered for


class StubProcess:
    def __init__(self, pid, argv, with_stdin):
        self.id, self.argv = pid, argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.out = {"stdout": bytearray(), "stderr": bytearray()}
        self.changed = threading.Condition()
        self.exit_code = None
        pumps = [threading.Thread(target=self._pump, args=(f, s), daemon=True)
                 for f, s in ((self.proc.stdout, "stdout"), (self.proc.stderr, "stderr"))]
        for pump in pumps:
            pump.start()
        threading.Thread(target=self._reap, args=(pumps,), daemon=True).start()

    def _pump(self, stream, name):
        for data in iter(lambda: stream.read1(1 << 16), b""):
            with self.changed:
                self.out[name] += data
                self.changed.notify_all()

    def _reap(self, pumps):
        code = self.proc.wait()
        for pump in pumps:
            pump.join()
        for pipe in (self.proc.stdout, self.proc.stderr, self.proc.stdin):
            try:
                if pipe:
                    pipe.close()
            except BrokenPipeError:
                pass  # what was buffered for a process that is gone
        with self.changed:
            self.exit_code = 128 - code if code < 0 else code  # a signal's death as Docker reports it
            self.changed.notify_all()

    def view(self):
        with self.changed:
            return {"id": self.id, "command": self.argv, "background": True, "running": self.exit_code is None,
                    "exitCode": self.exit_code, "stdoutBytes": len(self.out["stdout"]),
                    "stderrBytes": len(self.out["stderr"])}

    def follow(self, name, start):
        """The bytes from start on, then what comes, until the process ends or FOLLOW passes."""
        deadline = time.monotonic() + FOLLOW
        while True:
            with self.changed:
                data = bytes(self.out[name][start:])
                over = self.exit_code is not None
                if not data and not over:
                    self.changed.wait(max(0, deadline - time.monotonic()))
                    data = bytes(self.out[name][start:])
                    over = self.exit_code is not None
            if data:
                start += len(data)
                yield data
            if over or time.monotonic() > deadline:
                return


class StreamResponse:
    """An urllib3 response stand-in whose body comes from a generator, as a followed output arrives."""

    def __init__(self, blocks, headers):
        self.status, self.headers, self._blocks = 200, headers, blocks
        self.released = False

    def stream(self, amt):
        yield from self._blocks

    def read(self):
        return b"".join(self._blocks)

    def release_conn(self):
        self.released = True


class StubProcesses:
    def __init__(self):
        self.table = {}

    def kill_all(self):
        for p in self.table.values():
            if p.exit_code is None:
                os.killpg(p.proc.pid, signal.SIGKILL)
            p.proc.wait()
            with p.changed:
                while p.exit_code is None:
                    p.changed.wait()

    def __call__(self, method, sub, params, body):
        parts = sub.strip("/").split("/") if sub.strip("/") else []
        q = {}
        for k, v in params:
            q.setdefault(k, []).append(v)
        if not parts:
            if method == "GET":
                return Response(200, {"items": [p.view() for p in self.table.values()]})
            pid = q.get("id", [f"p-{len(self.table):08x}"])[0]
            if pid in self.table and self.table[pid].exit_code is None:
                return Response(409, status_body(409, "Conflict", f'a process named "{pid}" runs already'))
            self.table[pid] = StubProcess(pid, q["command"], q.get("stdin") == ["true"])
            return Response(201, self.table[pid].view())
        p = self.table.get(parts[0])
        if p is None:
            return Response(404, status_body(404, "NotFound", f'Sandbox "py" has no process "{parts[0]}"'))
        what = parts[1] if len(parts) > 1 else ""
        if what == "" and method == "GET":
            return Response(200, p.view())
        if what in ("stdout", "stderr"):
            start = int(q.get("from", ["0"])[0])
            headers = {"X-Dockside-Output-Start": str(start)}
            if q.get("follow") == ["true"]:
                return StreamResponse(p.follow(what, start), headers)
            with p.changed:
                resp = Response(200, bytes(p.out[what][start:]))
            resp.headers = headers
            return resp
        if what == "stdin":
            try:
                if body:
                    p.proc.stdin.write(body)
                    p.proc.stdin.flush()
                if q.get("close") == ["true"]:
                    p.proc.stdin.close()
            except (BrokenPipeError, ValueError) as exc:
                return Response(409, status_body(409, "Conflict", f'writing the input of process "{p.id}": {exc}'))
            return Response(200, {"kind": "Status", "status": "Success"})
        if what == "signal":
            if p.exit_code is not None:
                return Response(409, status_body(409, "Conflict", f'process "{p.id}" has ended'))
            sig = q["signal"][0].upper().removeprefix("SIG")
            try:
                os.killpg(p.proc.pid, int(sig) if sig.isdigit() else getattr(signal, "SIG" + sig))
            except ProcessLookupError:
                return Response(409, status_body(409, "Conflict", f'process "{p.id}" has ended'))
            return Response(200, {"kind": "Status", "status": "Success"})
        return Response(404, status_body(404, "NotFound", f"{method} {sub} is not served"))

