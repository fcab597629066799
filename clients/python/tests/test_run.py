"""Sandbox.run: through the data plane by default (FastPathTest), through an Execution with record=True
(RecordTest); the same Result and the same errors either way."""

import unittest

from dockside import (ApiError, DeadlineExceeded, DocksideError, ExecutionDeadlineExceeded, SandboxGone,
                      SandboxNotReady, SandboxPoisoned, WaitTimeout)
from dockside import execution
from tests.stub import ExecSocket, StubApi, healthy_agent, set_condition
from tests.test_commands import agent_socket, started
from tests.test_sandbox import sandbox

STDOUT, STDERR = 1, 2


def executing_agent(status, sandbox_conditions=()):
    """An agent that ends every Execution with status, and sets the Sandbox's conditions given."""
    def act(api, plural, obj):
        healthy_agent(api, plural, obj)
        if plural == "sandboxes":
            for cond in sandbox_conditions:
                set_condition(obj, *cond)
        if plural == "executions":
            obj["status"].update(status)
    return act


class RecordTest(unittest.TestCase):
    """Sandbox.run(record=True): an Execution made, waited for, read and deleted."""

    def test_a_command_returns_its_output_and_the_execution_is_deleted(self):
        api = StubApi(executing_agent({"phase": "Succeeded", "reason": "Completed", "message": "exited 0",
                                       "exitCode": 0, "stdout": "42\n", "stderr": "",
                                       "stdoutTruncatedBytes": 0}))
        sbx = sandbox(api).start()
        res = sbx.run(["python3", "-"], stdin="print(6 * 7)\n", timeout=2.5, env={"B": 1, "A": "x"}, record=True)
        self.assertEqual((res.exit_code, res.stdout, res.stderr, res.reason, res.ok), (0, "42\n", "", "Completed", True))
        created = next(body for verb, plural, _, body in api.calls if verb == "create" and plural == "executions")
        self.assertEqual(created["spec"], {"sandboxName": "py", "command": ["python3", "-"], "stdin": "print(6 * 7)\n",
                                           "timeoutSeconds": 3, "env": [{"name": "A", "value": "x"},
                                                                        {"name": "B", "value": "1"}]})
        self.assertEqual(created["metadata"]["ownerReferences"][0]["uid"], "uid-py")
        self.assertEqual([v for v, _ in api.verbs("executions")], ["create", "delete"])
        self.assertEqual([k for k in api.objects if k[0] == "executions"], [])

    def test_a_failing_command_is_a_result_with_its_truncation_counts(self):
        api = StubApi(executing_agent({"phase": "Failed", "reason": "OutputLimitExceeded", "message": "cut",
                                       "exitCode": 3, "stdout": "x" * 10, "stdoutTruncatedBytes": 90,
                                       "stderrTruncatedBytes": 7}))
        res = sandbox(api).start().run(["sh", "-c", "exit 3"], record=True)
        self.assertEqual((res.exit_code, res.stdout_truncated_bytes, res.stderr_truncated_bytes, res.ok), (3, 90, 7, False))

    def test_a_deadline_raises_with_the_output_printed_before_it(self):
        api = StubApi(executing_agent({"phase": "Failed", "reason": "DeadlineExceeded", "sandboxKilled": True,
                                       "message": "the command ran past its 1s deadline", "stdout": "early\n"}))
        with self.assertRaises(DeadlineExceeded) as caught:
            sandbox(api).start().run(["sleep", "30"], timeout=1, record=True)
        self.assertIsInstance(caught.exception, ExecutionDeadlineExceeded)
        self.assertIsInstance(caught.exception, SandboxPoisoned)
        self.assertEqual(str(caught.exception), "DeadlineExceeded: the command ran past its 1s deadline")
        self.assertEqual(caught.exception.result.stdout, "early\n")

    def test_processes_left_running_poison_the_sandbox(self):
        api = StubApi(executing_agent({"phase": "Failed", "reason": "LeftoverProcesses", "sandboxKilled": True,
                                       "exitCode": 0, "message": "processes running after the command exited"}))
        with self.assertRaisesRegex(SandboxPoisoned, "LeftoverProcesses") as caught:
            sandbox(api).start().run(["sh", "-c", "sleep 9 &"], record=True)
        self.assertEqual(caught.exception.result.exit_code, 0)

    def test_a_poisoned_sandbox_refuses_with_the_poisoning_reason(self):
        api = StubApi(executing_agent({"phase": "Failed", "reason": "SandboxNotReady", "message": "not Ready"}))
        sbx = sandbox(api).start()
        set_condition(api.objects[("sandboxes", "py")], "TopologyPoisoned", "True", "DeadlineExceeded", "killed at the deadline")
        with self.assertRaisesRegex(SandboxPoisoned, "DeadlineExceeded: killed at the deadline"):
            sbx.run(["true"], record=True)

    def test_a_sandbox_not_ready_otherwise_says_so(self):
        api = StubApi(executing_agent({"phase": "Failed", "reason": "SandboxNotReady", "message": "Sandbox team/py is a run"}))
        with self.assertRaisesRegex(SandboxNotReady, "is a run"):
            sandbox(api).start().run(["true"], record=True)

    def test_a_gone_sandbox_raises_sandbox_gone(self):
        api = StubApi(healthy_agent)
        sbx = sandbox(api).start()
        sbx.delete()
        with self.assertRaisesRegex(SandboxGone, "Sandbox team/py does not exist"):
            sbx.run(["true"], record=True)

    def test_giving_up_deletes_the_execution(self):
        api = StubApi(healthy_agent)  # never runs Executions
        sandbox(api).start()
        with self.assertRaisesRegex(WaitTimeout, "Execution team/py-"):
            execution.run(api, "team", "py", ["true"], timeout=0.2, queue_seconds=0)
        self.assertEqual([v for v, _ in api.verbs("executions")], ["create", "delete"])
        self.assertEqual([k for k in api.objects if k[0] == "executions"], [])

    def test_an_execution_deleted_under_the_client_says_so(self):
        def deleting(api, plural, obj):
            healthy_agent(api, plural, obj)
            if plural == "executions":
                api.delete("team", plural, obj["metadata"]["name"])

        api = StubApi(deleting)
        with self.assertRaisesRegex(DocksideError, "Deleted: Execution py-.* was deleted before it ended"):
            sandbox(api).start().run(["true"], record=True)

    def test_a_command_string_is_refused(self):
        with self.assertRaisesRegex(TypeError, "argv list"):
            sandbox(StubApi(healthy_agent)).start().run("echo hi", record=True)

    def test_keep_records_and_keeps_the_execution(self):
        api = StubApi(executing_agent({"phase": "Succeeded", "reason": "Completed", "exitCode": 0}))
        res = sandbox(api).start().run(["true"], keep=True)
        self.assertEqual([v for v, _ in api.verbs("executions")], ["create"])
        self.assertIn(("executions", res.name), api.objects)
        self.assertEqual(api.sockets, [], "no exec stream")

    def test_stdin_is_text_for_an_execution(self):
        api = StubApi(healthy_agent)
        with self.assertRaisesRegex(TypeError, "stdin is text"):
            sandbox(api).start().run(["cat"], stdin=b"bytes", record=True)
        self.assertEqual(api.verbs("executions"), [])


def refusing(code, reason, message):
    """An exec that the server refuses, as dataplane.Wire.exec raises it."""
    def make():
        raise ApiError(reason, message, status=code)
    return make


class FastPathTest(unittest.TestCase):
    """Sandbox.run's default: one exec stream, no Execution, a Result of the same shape."""

    def test_a_command_runs_on_an_exec_stream_and_no_execution_is_made(self):
        def script(sock):
            sock.out(STDOUT, b"42\n")
            sock.exit(0)

        api, sbx = started(script)
        res = sbx.run(["python3", "-c", "print(6 * 7)"], timeout=30)
        self.assertEqual((res.exit_code, res.stdout, res.stderr, res.reason, res.ok, res.name, res.sandbox_killed),
                         (0, "42\n", "", "Completed", True, "", False))
        self.assertEqual(res.message, "the command exited with code 0")
        self.assertEqual((res.stdout_truncated_bytes, res.stderr_truncated_bytes), (0, 0))
        self.assertEqual(api.calls[-1], ("exec", "sandboxes", "py",
                                         {"command": ["python3", "-c", "print(6 * 7)"], "stdin": False, "tty": False}))
        self.assertEqual(api.verbs("executions"), [])
        self.assertTrue(api.sockets[0].closed.is_set())

    def test_stdin_of_any_size_as_text_bytes_or_a_file(self):
        program = "x = 1\n" * 40000 + "print(x)\n"  # 240 KB: more than an Execution's stdin takes

        def cat(sock, message):
            if message == b"\xff\x00":
                sock.out(STDOUT, b"".join(m[1:] for m in sock.sent if m[:1] == b"\x00")[-9:])
                sock.exit(0)

        api = StubApi(healthy_agent)
        api.next_socket = lambda: ExecSocket(cat)
        sbx = sandbox(api).start()
        for stdin in (program, program.encode()):
            res = sbx.run(["python3", "-"], stdin=stdin, timeout=30)
            self.assertEqual(res.stdout, "print(x)\n")
            self.assertEqual(api.sockets[-1].stdin(), (program.encode(), True))
        self.assertTrue(api.calls[-1][3]["stdin"])
        self.assertEqual(api.verbs("executions"), [])

    def test_a_non_zero_exit_is_a_result(self):
        def script(sock):
            sock.out(STDERR, b"oops\n")
            sock.exit(3)

        _, sbx = started(script)
        res = sbx.run(["sh", "-c", "echo oops >&2; exit 3"])
        self.assertEqual((res.exit_code, res.stderr, res.reason, res.ok), (3, "oops\n", "Error", False))
        self.assertEqual(res.message, "the command exited with code 3")

    def test_output_past_the_cap_is_cut_and_counted(self):
        def script(sock):
            for _ in range(5):
                sock.out(STDOUT, b"x" * 1000)
            sock.out(STDERR, b"e" * 10)
            sock.exit(0)

        _, sbx = started(script)
        res = sbx.run(["yes"], max_output_bytes=1000)
        self.assertEqual((len(res.stdout), res.stdout_truncated_bytes, res.stderr, res.stderr_truncated_bytes),
                         (1000, 4000, "e" * 10, 0))
        self.assertEqual((res.exit_code, res.reason, res.ok), (0, "OutputLimitExceeded", False))
        self.assertEqual(res.message, "the command exited with code 0; output past the cap was cut "
                                      "(4000 bytes of stdout, 0 of stderr)")

    def test_the_cap_is_an_executions_default_unless_told(self):
        def script(sock):
            sock.out(STDOUT, b"y" * 70000)
            sock.exit(0)

        _, sbx = started(script)
        res = sbx.run(["yes"])
        self.assertEqual((len(res.stdout), res.stdout_truncated_bytes), (65536, 70000 - 65536))
        with self.assertRaisesRegex(ValueError, "at least 1"):
            sbx.run(["yes"], max_output_bytes=0)

    def test_a_timeout_ends_the_command_and_leaves_the_sandbox_running(self):
        api, sbx = started(lambda sock: sock.out(STDOUT, b"early\n"))  # and never ends
        with self.assertRaises(DeadlineExceeded) as caught:
            sbx.run(["sleep", "600"], timeout=0.3)
        self.assertNotIsInstance(caught.exception, SandboxPoisoned)
        self.assertEqual(caught.exception.reason, "DeadlineExceeded")
        res = caught.exception.result
        self.assertEqual((res.stdout, res.exit_code, res.reason, res.sandbox_killed), ("early\n", None,
                                                                                      "DeadlineExceeded", False))
        self.assertTrue(api.sockets[0].closed.is_set(), "its stream is closed, which ends the command")
        self.assertEqual(sbx.status()["phase"], "Running")

    def test_env_and_working_dir_go_through_the_images_env_and_sh(self):
        api, sbx = started(lambda sock: sock.exit(0))
        sbx.run(["python3", "x.py"], env={"B": 2, "A": "x y"}, working_dir="/workspace/d")
        self.assertEqual(api.calls[-1][3]["command"], [
            "env", "A=x y", "B=2", "sh", "-c", 'cd -- "$1" && shift && exec "$@"', "sh", "/workspace/d",
            "python3", "x.py"])

    def test_a_paused_sandbox_is_not_ready(self):
        api, sbx = started()
        api.next_socket = refusing(409, "Conflict", 'Sandbox "py" is Paused: resume it first')
        with self.assertRaisesRegex(SandboxNotReady, "SandboxNotReady: Sandbox \"py\" is Paused"):
            sbx.run(["true"])

    def test_a_poisoned_sandbox_refuses_with_the_poisoning_reason(self):
        api, sbx = started()
        set_condition(api.objects[("sandboxes", "py")], "TopologyPoisoned", "True", "DeadlineExceeded",
                      "killed at the deadline")
        api.next_socket = refusing(409, "Conflict", 'Sandbox "py" is Failed, not Running')
        with self.assertRaisesRegex(SandboxPoisoned, "DeadlineExceeded: killed at the deadline"):
            sbx.run(["true"])

    def test_a_gone_sandbox_raises_sandbox_gone(self):
        api, sbx = started()
        sbx.delete()
        api.next_socket = refusing(404, "NotFound", 'sandboxes.dockside.dev "py" not found')
        with self.assertRaisesRegex(SandboxGone, "Sandbox team/py does not exist"):
            sbx.run(["true"])

    def test_a_sandbox_deleted_under_the_command_raises_sandbox_gone_with_its_output(self):
        api, sbx = started()

        def script(sock):
            sock.out(STDOUT, b"partial\n")
            api.objects.pop(("sandboxes", "py"))
            sock.incoming.put(None)  # the stream breaks off before the exit status

        api.next_socket = agent_socket(script)
        with self.assertRaises(SandboxGone) as caught:
            sbx.run(["sleep", "600"])
        self.assertEqual(caught.exception.result.stdout, "partial\n")

    def test_other_refusals_are_the_servers_words(self):
        api, sbx = started()
        api.next_socket = refusing(403, "Forbidden", "cannot create sandboxes/exec")
        with self.assertRaisesRegex(ApiError, "Forbidden: cannot create sandboxes/exec"):
            sbx.run(["true"])

    def test_a_command_that_could_not_run_is_an_error_in_the_agents_words(self):
        def script(sock):
            sock.out(3, b'{"status": "Failure", "reason": "InternalError", "message": "nope: not found"}')
            sock.incoming.put(None)

        _, sbx = started(script)
        with self.assertRaisesRegex(DocksideError, "InternalError: nope: not found"):
            sbx.run(["nope"])

    def test_a_command_string_is_refused_before_anything_is_sent(self):
        api, sbx = started()
        with self.assertRaisesRegex(TypeError, "argv list"):
            sbx.run("echo hi")
        self.assertEqual(api.sockets, [])


if __name__ == "__main__":
    unittest.main()
