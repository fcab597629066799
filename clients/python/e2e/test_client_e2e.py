"""The client against a real cluster: run by test/e2e/python_client_test.go with KUBECONFIG naming the e2e
suite's control plane, whose current context's namespace holds the redis SandboxService of config/samples.
The Go spec checks afterwards that nothing labelled is left in Docker."""

import asyncio
import contextlib
import hashlib
import io
import os
import runpy
import subprocess
import sys
import tempfile
import time
import unittest

from kubernetes import config as kubeconfig
from kubernetes import client, watch

from dockside import (ApiError, AsyncSandbox, CommandTimeout, DeadlineExceeded, ExecutionDeadlineExceeded, Sandbox,
                      SandboxGone, SandboxPoisoned)

PYTHON = "dockside.dev/python:local"
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "quickstart.py")
READY_SECONDS = 300  # a loaded 2-core machine starts a Sandbox with a service in seconds; this is margin

# Talks to redis:6379 (its own instance, on the topology's private network) with the Redis protocol, no library.
REDIS_SCRIPT = """
import socket, sys
def redis(*args):
    with socket.create_connection(("redis", 6379), timeout=10) as s:
        s.sendall(("*%d\\r\\n" % len(args) + "".join("$%d\\r\\n%s\\r\\n" % (len(a), a) for a in args)).encode())
        return s.recv(1024).decode()
print(redis(*sys.stdin.readline().split()), end="")
"""

# The workspace file the checkpoint must carry over: random bytes, and their digest.
FILL_SCRIPT = """
import hashlib, os
data = os.urandom(1 << 20)
open("/workspace/blob", "wb").write(data)
print(hashlib.sha256(data).hexdigest())
"""
DIGEST_SCRIPT = "import hashlib; print(hashlib.sha256(open('/workspace/blob', 'rb').read()).hexdigest())"
# How many `sleep 300` run in the Sandbox, from /proc (the image need not have ps); a process may end mid-scan.
COUNT_SLEEPS = """
import os
n = 0
for p in os.listdir('/proc'):
    try:
        n += open('/proc/%s/cmdline' % p, 'rb').read() == b'sleep\\x00300\\x00'
    except (OSError, ValueError):
        pass
print(n)
"""
# How many processes run `time.sleep(120)` (the needle is built so that this script's own command line lacks it).
COUNT_SLEEPERS = """
import os
needle, n = b"time.sleep(" + b"120)", 0
for p in os.listdir('/proc'):
    try:
        n += needle in open('/proc/%s/cmdline' % p, 'rb').read()
    except (OSError, ValueError):
        pass
print(n)
"""
# Starts a background process in the Sandbox named by argv[1], writes to its stdin, prints its ID and exits.
START_SCRIPT = """
import sys
from dockside import Sandbox
h = Sandbox.attach(sys.argv[1]).commands.run(
    'trap "echo term; exit 4" TERM; echo up; read x; echo got $x; while :; do sleep 1; done', background=True)
h.send_stdin("hello\\n")
print(h.id)
"""
CLIENT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PID1_START = "print(open('/proc/1/stat').read().rsplit(')', 1)[1].split()[19])"  # starttime of PID 1


def redis_command(sbx, line):
    return sbx.run(["python3", "-c", REDIS_SCRIPT], stdin=line + "\n", timeout=30)


class SessionWithServiceTest(unittest.TestCase):
    def test_run_pause_checkpoint_restore_deadline_and_cleanup(self):
        sbx = Sandbox(PYTHON, cpus=1, memory_mb=512, pids_limit=256, workspace_mb=64, network="none",
                      env={"GREETING": "hello"}, services=["redis"], ready_timeout=READY_SECONDS)
        with sbx:
            res = sbx.run(["python3", "-"], stdin="import os\nprint(os.environ['GREETING'], 6 * 7)\n", timeout=30)
            self.assertEqual((res.exit_code, res.stdout, res.reason), (0, "hello 42\n", "Completed"))
            res = sbx.run(["python3", "-c", "import sys; print('oops', file=sys.stderr); sys.exit(3)"], timeout=30)
            self.assertEqual((res.exit_code, res.stderr, res.reason, res.ok), (3, "oops\n", "Error", False))
            res = sbx.run(["python3", "-c", "print('x' * 5000)"], timeout=30, max_output_bytes=1000)
            self.assertEqual((len(res.stdout), res.stdout_truncated_bytes, res.exit_code), (1000, 4001, 0))

            self.assertEqual(redis_command(sbx, "SET kept-in-memory 1").stdout, "+OK\r\n")
            started = sbx.run(["python3", "-c", PID1_START]).stdout
            sbx.pause()
            self.assertEqual(sbx.status()["phase"], "Paused")
            sbx.resume()
            self.assertEqual(sbx.run(["python3", "-c", PID1_START]).stdout, started, "PID 1 is the same process")
            self.assertEqual(redis_command(sbx, "GET kept-in-memory").stdout, "$1\r\n1\r\n",
                             "the redis service kept its memory across the pause")

            self.assertEqual(poisoned(sbx), [], "no service failed while the Sandbox was paused")

            digest = sbx.run(["python3", "-"], stdin=FILL_SCRIPT).stdout
            with sbx.checkpoint() as snap:
                self.assertRegex(snap.digest, r"^sha256:[0-9a-f]{64}$")
                self.assertGreater(snap.size_bytes, 1 << 20)
                with sbx.restore_into(sbx.name + "-restored") as copy:
                    self.assertEqual(copy.run(["python3", "-c", DIGEST_SCRIPT]).stdout, digest)
                    self.assertEqual(redis_command(copy, "PING").stdout, "+PONG\r\n", "with its own redis")

            # The default path ends the command at its timeout and leaves the Sandbox running.
            with self.assertRaises(DeadlineExceeded) as caught:
                sbx.run(["python3", "-c", "import time; print('early', flush=True); time.sleep(120)"], timeout=8)
            self.assertNotIsInstance(caught.exception, SandboxPoisoned)
            self.assertEqual(caught.exception.result.stdout, "early\n", "what was printed before the timeout")
            self.assertFalse(caught.exception.result.sandbox_killed)
            wait_until(lambda: sbx.run(["python3", "-c", COUNT_SLEEPERS]).stdout == "0\n")
            self.assertEqual(poisoned(sbx), [])

            # An Execution's deadline kills the Sandbox's container and poisons the Sandbox.
            with self.assertRaises(ExecutionDeadlineExceeded) as caught:
                sbx.run(["python3", "-c", "import time; print('early', flush=True); time.sleep(120)"], timeout=8,
                        record=True)
            self.assertEqual(caught.exception.result.stdout, "early\n", "what was printed before the kill")
            self.assertTrue(caught.exception.result.sandbox_killed)
            wait_until(lambda: poisoned(sbx))
            with self.assertRaises(SandboxPoisoned) as caught:
                sbx.run(["true"])
            self.assertEqual(caught.exception.reason, "DeadlineExceeded")
        with self.assertRaises(SandboxGone):
            sbx.run(["true"])

    def test_refusals_are_the_api_servers_words(self):
        with self.assertRaises(ApiError) as caught:
            Sandbox(PYTHON, memory_mb=1).start()
        self.assertEqual(caught.exception.reason, "Invalid")
        self.assertIn("memory", caught.exception.message)

    def test_asyncio(self):
        async def main():
            async with AsyncSandbox("dockside.dev/busybox:local", ready_timeout=READY_SECONDS) as sbx:
                results = await asyncio.gather(*(sbx.run(["echo", str(i)]) for i in range(3)))
                return sorted(r.stdout for r in results)

        self.assertEqual(asyncio.run(main()), ["0\n", "1\n", "2\n"])

    def test_run_goes_through_the_data_plane_unless_recorded(self):
        with Sandbox(PYTHON, cpus=1, memory_mb=256, workspace_mb=64, network="none",
                     ready_timeout=READY_SECONDS) as sbx:
            program = "x = 1\n" * 34000 + "print(x + 41)\n"  # 204 KB on stdin: past an Execution's 64 KiB
            res, made = executions_made(sbx, lambda: sbx.run(["python3", "-"], stdin=program, timeout=60))
            self.assertEqual((res.exit_code, res.stdout, res.reason, res.name), (0, "42\n", "Completed", ""))
            self.assertEqual(made, set(), "the default path makes no Execution")

            res, made = executions_made(sbx, lambda: sbx.run(["python3", "-"], stdin="print(6 * 7)\n", timeout=60,
                                                             record=True))
            self.assertEqual((res.exit_code, res.stdout, res.reason), (0, "42\n", "Completed"))
            self.assertEqual(made, {res.name}, "record=True makes one Execution")
            with self.assertRaises(ApiError) as caught:
                sbx.run(["python3", "-"], stdin=program, record=True)
            self.assertEqual(caught.exception.reason, "Invalid")
            self.assertIn("stdin", caught.exception.message)

    def test_streamed_commands_and_files_through_the_data_plane(self):
        with Sandbox(PYTHON, cpus=1, memory_mb=256, workspace_mb=64, network="none",
                     ready_timeout=READY_SECONDS) as sbx:
            # A line reaches the client while the command still runs (it waits for its stdin).
            h = sbx.commands.run("echo one; read x; echo $x; echo err >&2", background=True)
            wait_until(lambda: h.stdout == "one\n")
            self.assertTrue(h.running())
            h.send_stdin("two\n")
            h.close_stdin()
            res = h.wait(timeout=60)
            self.assertEqual((res.exit_code, res.stdout, res.stderr), (0, "one\ntwo\n", "err\n"))

            res = sbx.commands.run('echo "$GREETING from $(pwd)"', env={"GREETING": "hi there"}, cwd="/tmp")
            self.assertEqual(res.stdout, "hi there from /tmp\n")

            program = "x = 1\n" * 50000 + "print(x + 41)\nimport sys; sys.exit(3)\n"  # 300 KB on stdin
            res = sbx.commands.run(["python3", "-"], stdin=program, timeout=60)
            self.assertEqual((res.exit_code, res.stdout), (3, "42\n"))

            # A timeout closes the stream, and the agent ends the command with it and what it started in the
            # background, whether it keeps writing or stays silent.
            with self.assertRaises(CommandTimeout) as caught:
                sbx.commands.run("while :; do echo tick; sleep 0.5; done & exec sleep 300", timeout=3)
            self.assertTrue(caught.exception.result.stdout.startswith("tick\n"), caught.exception.result.stdout)
            wait_until(lambda: sbx.commands.run(["python3", "-c", COUNT_SLEEPS], timeout=30).stdout == "0\n")
            with self.assertRaises(CommandTimeout):
                sbx.commands.run("sleep 300", timeout=3)
            wait_until(lambda: sbx.commands.run(["python3", "-c", COUNT_SLEEPS], timeout=30).stdout == "0\n")
            h = sbx.commands.run("sleep 300", background=True)
            wait_until(lambda: sbx.commands.run(["python3", "-c", COUNT_SLEEPS], timeout=30).stdout == "1\n")
            h.kill()
            wait_until(lambda: sbx.commands.run(["python3", "-c", COUNT_SLEEPS], timeout=30).stdout == "0\n")
            self.assertEqual(h.wait(timeout=60).exit_code, 137, "SIGKILL, as Docker reports it")

            # A background process outlives the client that started it: another Python process starts it and
            # exits, and this one finds it by its ID, follows its output and signals it.
            starter = subprocess.run([sys.executable, "-c", START_SCRIPT, sbx.name], capture_output=True, text=True,
                                     timeout=120, env=dict(os.environ, PYTHONPATH=CLIENT_DIR))
            self.assertEqual(starter.returncode, 0, starter.stderr)
            seen = []
            h = sbx.commands.connect(starter.stdout.strip(), on_stdout=seen.append)
            wait_until(lambda: "".join(seen) == "up\ngot hello\n")
            self.assertTrue(h.running(), "its client is gone, it runs on")
            self.assertIn(h.id, [p["id"] for p in sbx.commands.list() if p["running"]])
            self.assertTrue(h.kill("TERM"))
            res = h.wait(timeout=60)
            self.assertEqual((res.exit_code, res.stdout, "".join(seen)), (4, "up\ngot hello\nterm\n", res.stdout))
            self.assertFalse(h.kill(), "it has ended")

            blob = os.urandom(5 << 20)
            info = sbx.files.write("/workspace/blob", blob, mode=0o600)
            self.assertEqual((info.size, info.mode, info.type), (len(blob), 0o600, "file"))
            self.assertEqual(sbx.files.read("/workspace/blob", format="bytes"), blob)
            self.assertEqual(sbx.commands.run(["python3", "-c", DIGEST_SCRIPT]).stdout,
                             hashlib.sha256(blob).hexdigest() + "\n")
            self.assertIn("blob", [e.name for e in sbx.files.list("/workspace")])

            with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as dst:
                os.makedirs(os.path.join(src, "pkg"))
                with open(os.path.join(src, "pkg", "mod.py"), "w") as f:
                    f.write("VALUE = 42\n")
                sbx.files.upload(src, "/workspace/repo")
                res = sbx.commands.run(["python3", "-c", "import sys; sys.path.insert(0, '/workspace/repo'); "
                                        "import pkg.mod; print(pkg.mod.VALUE)"], timeout=30)
                self.assertEqual((res.stdout, res.stderr), ("42\n", ""))
                sbx.files.make_dir("/workspace/repo/out")
                sbx.files.write("/workspace/repo/out/result.txt", "done\n")
                sbx.files.download("/workspace/repo", dst)
                with open(os.path.join(dst, "pkg", "mod.py")) as f, open(os.path.join(dst, "out", "result.txt")) as g:
                    self.assertEqual((f.read(), g.read()), ("VALUE = 42\n", "done\n"))
            sbx.files.remove("/workspace/repo", recursive=True)
            self.assertFalse(sbx.files.exists("/workspace/repo"))

            with self.assertRaises(ApiError) as caught:
                sbx.files.read("/workspace/missing")
            self.assertEqual(caught.exception.status, 404)
            with self.assertRaises(ApiError) as caught:
                sbx.files.write("/etc/motd", "x")
            self.assertEqual(caught.exception.status, 403, caught.exception.message)

    def test_the_readme_example(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            runpy.run_path(EXAMPLE, run_name="__main__")
        self.assertEqual(out.getvalue(), "0 saved\nsha256: 42\n")


def executions_made(sbx, action):
    """What action() returns, and the names of the Executions of sbx made while it ran: a watch of the
    namespace's Executions from the resourceVersion of a list taken before replays every change since."""
    with kubeconfig.new_client_from_config(config_file=os.environ["KUBECONFIG"]) as api_client:
        api = client.CustomObjectsApi(api_client)
        args = ("dockside.dev", "v1alpha1", sbx.namespace, "executions")
        since = api.list_namespaced_custom_object(*args)["metadata"]["resourceVersion"]
        got = action()
        made = set()
        for event in watch.Watch().stream(api.list_namespaced_custom_object, *args, resource_version=since,
                                          timeout_seconds=5):
            if event["type"] == "ERROR":
                raise AssertionError(f"the watch of Executions failed: {event['raw_object']}")
            if event["object"]["spec"]["sandboxName"] == sbx.name:
                made.add(event["object"]["metadata"]["name"])
    return got, made


def poisoned(sbx):
    """The Sandbox's TopologyPoisoned condition when it is True, as [reason, message]; [] otherwise."""
    return [[c["reason"], c["message"]] for c in sbx.status().get("conditions", [])
            if c["type"] == "TopologyPoisoned" and c["status"] == "True"]


def wait_until(check, seconds=60):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {seconds}s")
        time.sleep(0.5)


if __name__ == "__main__":
    unittest.main()
