import unittest

from dockside import DeadlineExceeded, DocksideError, SandboxGone, SandboxNotReady, SandboxPoisoned, WaitTimeout
from dockside import execution
from tests.stub import StubApi, healthy_agent, set_condition
from tests.test_sandbox import sandbox


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


class RunTest(unittest.TestCase):
    def test_a_command_returns_its_output_and_the_execution_is_deleted(self):
        api = StubApi(executing_agent({"phase": "Succeeded", "reason": "Completed", "message": "exited 0",
                                       "exitCode": 0, "stdout": "42\n", "stderr": "",
                                       "stdoutTruncatedBytes": 0}))
        sbx = sandbox(api).start()
        res = sbx.run(["python3", "-"], stdin="print(6 * 7)\n", timeout=2.5, env={"B": 1, "A": "x"})
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
        res = sandbox(api).start().run(["sh", "-c", "exit 3"])
        self.assertEqual((res.exit_code, res.stdout_truncated_bytes, res.stderr_truncated_bytes, res.ok), (3, 90, 7, False))

    def test_a_deadline_raises_with_the_output_printed_before_it(self):
        api = StubApi(executing_agent({"phase": "Failed", "reason": "DeadlineExceeded", "sandboxKilled": True,
                                       "message": "the command ran past its 1s deadline", "stdout": "early\n"}))
        with self.assertRaises(DeadlineExceeded) as caught:
            sandbox(api).start().run(["sleep", "30"], timeout=1)
        self.assertIsInstance(caught.exception, SandboxPoisoned)
        self.assertEqual(str(caught.exception), "DeadlineExceeded: the command ran past its 1s deadline")
        self.assertEqual(caught.exception.result.stdout, "early\n")

    def test_processes_left_running_poison_the_sandbox(self):
        api = StubApi(executing_agent({"phase": "Failed", "reason": "LeftoverProcesses", "sandboxKilled": True,
                                       "exitCode": 0, "message": "processes running after the command exited"}))
        with self.assertRaisesRegex(SandboxPoisoned, "LeftoverProcesses") as caught:
            sandbox(api).start().run(["sh", "-c", "sleep 9 &"])
        self.assertEqual(caught.exception.result.exit_code, 0)

    def test_a_poisoned_sandbox_refuses_with_the_poisoning_reason(self):
        api = StubApi(executing_agent({"phase": "Failed", "reason": "SandboxNotReady", "message": "not Ready"}))
        sbx = sandbox(api).start()
        set_condition(api.objects[("sandboxes", "py")], "TopologyPoisoned", "True", "DeadlineExceeded", "killed at the deadline")
        with self.assertRaisesRegex(SandboxPoisoned, "DeadlineExceeded: killed at the deadline"):
            sbx.run(["true"])

    def test_a_sandbox_not_ready_otherwise_says_so(self):
        api = StubApi(executing_agent({"phase": "Failed", "reason": "SandboxNotReady", "message": "Sandbox team/py is a run"}))
        with self.assertRaisesRegex(SandboxNotReady, "is a run"):
            sandbox(api).start().run(["true"])

    def test_a_gone_sandbox_raises_sandbox_gone(self):
        api = StubApi(healthy_agent)
        sbx = sandbox(api).start()
        sbx.delete()
        with self.assertRaisesRegex(SandboxGone, "Sandbox team/py does not exist"):
            sbx.run(["true"])

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
            sandbox(api).start().run(["true"])

    def test_a_command_string_is_refused(self):
        with self.assertRaisesRegex(TypeError, "argv list"):
            sandbox(StubApi(healthy_agent)).start().run("echo hi")


if __name__ == "__main__":
    unittest.main()
