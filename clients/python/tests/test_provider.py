"""DocksideSandbox against the stub API: the conformance of tests/provider_conformance.py (commands run as
local processes, files in the stub's tree, Checkpoints that copy it), the spec its arguments make, and close()."""

import asyncio
import copy
import os
import tempfile
import unittest

from dockside import DocksideSandbox
from tests.provider_conformance import check_provider
from tests.stub import ProcessSocket, StubApi, healthy_agent, set_condition


def checkpointing_agent(api, plural, obj):
    """healthy_agent, plus Checkpoints that copy the stub's file tree and restores that put it back."""
    healthy_agent(api, plural, obj)
    if plural == "checkpoints" and obj["status"].get("phase") != "Ready":
        api.stored = getattr(api, "stored", {})
        api.stored[obj["metadata"]["name"]] = copy.deepcopy(api.filesystem.tree)
        obj["status"].update(phase="Ready", digest="sha256:" + "ab" * 32, sizeBytes=1, nodeName="n1")
        set_condition(obj, "Ready", "True", "Succeeded")
    if plural == "sandboxes" and obj["spec"].get("restoreFrom") and not obj["status"].get("restored"):
        api.filesystem.tree = copy.deepcopy(api.stored[obj["spec"]["restoreFrom"]])
        obj["status"]["restored"] = True


class ProviderTest(unittest.TestCase):
    def test_every_method_of_both_surfaces(self):
        api = StubApi(checkpointing_agent)
        workdir = tempfile.mkdtemp(prefix="dockside-provider-")
        self.addCleanup(os.rmdir, workdir)
        # Commands run here as local processes, in a directory of the test's own; files go to the stub's tree.
        api.next_socket = lambda: ProcessSocket(api.calls[-1][3]["command"])
        provider = DocksideSandbox("dockside.dev/python:local", namespace="team", api=api, working_dir=workdir)
        provider.start()
        snap = check_provider(self, provider)
        spec = api.calls[0][3]["spec"]
        self.assertEqual((spec["resources"], spec["workspace"], spec["network"]),
                         ({"cpu": "2", "memory": "2048Mi", "pids": 256}, {"size": "512Mi"}, {"mode": "Isolated"}))
        self.assertIn(("create", "checkpoints"), [(v, p) for v, p, _, _ in api.calls])
        restored = provider.sandbox
        self.assertEqual(api.objects[("sandboxes", restored.name)]["spec"]["restoreFrom"], snap)
        self.assertEqual(len([k for k in api.objects if k[0] == "sandboxes"]), 1, "the old Sandbox is deleted")
        provider.close()
        self.assertEqual(list(api.objects), [], "the Sandbox and the snapshot's Checkpoint are deleted")

    def test_record_runs_each_command_through_an_execution(self):
        def executing(api, plural, obj):
            checkpointing_agent(api, plural, obj)
            if plural == "executions":
                obj["status"].update(phase="Failed", reason="Error", exitCode=3, stdout="out\n", stderr="err\n")

        api = StubApi(executing)
        with DocksideSandbox("dockside.dev/python:local", namespace="team", api=api, record=True) as provider:
            res = provider.execute("echo out; echo err >&2; exit 3")
            self.assertEqual((res.output, res.exit_code, res.truncated), ("out\nerr\n", 3, False))
            got = asyncio.run(provider.exec("ls", "-l"))
            self.assertEqual((got.stdout, got.stderr, got.exit_code), (b"out\n", b"err\n", 3))
        specs = [body["spec"] for verb, plural, _, body in api.calls if (verb, plural) == ("create", "executions")]
        self.assertEqual([(s["command"], s["workingDir"], s["maxOutputBytes"]) for s in specs],
                         [(["sh", "-c", "echo out; echo err >&2; exit 3"], "/workspace", 262144),
                          (["sh", "-c", "ls -l"], "/workspace", 262144)])
        self.assertEqual(api.sockets, [], "no exec stream")

    def test_nothing_is_created_before_the_first_call(self):
        api = StubApi(healthy_agent)
        with DocksideSandbox("dockside.dev/python:local", namespace="team", api=api) as provider:
            self.assertEqual(len(api.objects), 1)
            self.assertTrue(provider.id)
        self.assertEqual(api.objects, {})
        DocksideSandbox("dockside.dev/python:local", namespace="team", api=api)
        self.assertEqual(api.calls[-1][0], "delete", "constructing creates nothing")


if __name__ == "__main__":
    unittest.main()
