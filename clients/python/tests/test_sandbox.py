import asyncio
import time
import unittest

from dockside import (AsyncSandbox, CheckpointFailed, Sandbox, SandboxFailed, SandboxGone, SandboxPoisoned,
                      WaitTimeout)
from tests.stub import StubApi, healthy_agent, observe, set_condition


def sandbox(api, **kwargs):
    return Sandbox("dockside.dev/python:local", name="py", namespace="team", api=api, ready_timeout=5, **kwargs)


def checkpointing_agent(api, plural, obj):
    healthy_agent(api, plural, obj)
    if plural == "checkpoints":
        obj["status"].update(phase="Ready", digest="sha256:" + "ab" * 32, sizeBytes=4096, nodeName="n1")
        set_condition(obj, "Ready", "True", "Succeeded")


class LifecycleTest(unittest.TestCase):
    def test_start_waits_for_ready_at_the_current_generation(self):
        api = StubApi(healthy_agent)
        sbx = sandbox(api, cpus=2).start()
        self.assertEqual(sbx.status()["phase"], "Running")
        self.assertEqual(api.objects[("sandboxes", "py")]["spec"]["resources"], {"cpu": "2"})

    def test_a_sandbox_that_cannot_start_says_why_and_is_deleted(self):
        def failing(api, plural, obj):
            observe(obj)
            set_condition(obj, "Stalled", "True", "ServiceReadinessFailed", "service redis never passed readiness")
            set_condition(obj, "Ready", "False", "ServiceReadinessFailed", "service redis never passed readiness")

        api = StubApi(failing)
        with self.assertRaises(SandboxFailed) as caught:
            sandbox(api, services=["redis"]).start()
        self.assertEqual(caught.exception.reason, "ServiceReadinessFailed")
        self.assertEqual(str(caught.exception), "ServiceReadinessFailed: service redis never passed readiness")
        self.assertEqual(api.objects, {})

    def test_a_failed_pull_fails_the_start_at_once_naming_the_image(self):
        message = ("pulling image dockside.dev/pyhton:local for the Sandbox failed: ImageNotFound")

        def pull_failing(api, plural, obj):  # the agent would try again until the startup deadline
            set_condition(obj, "Ready", "False", "ImagePullFailed", message)

        api = StubApi(pull_failing)
        sbx = Sandbox("dockside.dev/pyhton:local", name="py", namespace="team", api=api, ready_timeout=120,
                      image_pull_policy="IfNotPresent")
        self.assertEqual(api.objects, {})
        start = time.monotonic()
        with self.assertRaises(SandboxFailed) as caught:
            sbx.start()
        self.assertLess(time.monotonic() - start, 60, "not the ready timeout")
        self.assertEqual((caught.exception.reason, caught.exception.message), ("ImagePullFailed", message))
        self.assertEqual(api.calls[0][3]["spec"]["imagePullPolicy"], "IfNotPresent")
        self.assertEqual(api.objects, {}, "deleted")

    def test_a_sandbox_never_ready_times_out_and_is_deleted(self):
        api = StubApi()
        sbx = sandbox(api)
        sbx.ready_timeout = 0.2
        with self.assertRaisesRegex(WaitTimeout, "Sandbox team/py becoming Ready: not done after 0.2s; last state: phase unset"):
            sbx.start()
        self.assertEqual(api.objects, {})

    def test_pause_and_resume_change_the_lifecycle_and_wait_for_the_agent(self):
        api = StubApi(healthy_agent)
        sbx = sandbox(api).start()
        sbx.pause()
        self.assertEqual(sbx.status()["phase"], "Paused")
        sbx.resume()
        self.assertEqual(sbx.status()["phase"], "Running")
        patches = [body for verb, _, _, body in api.calls if verb == "patch"]
        self.assertEqual(patches, [{"spec": {"lifecycle": "Paused"}}, {"spec": {"lifecycle": "Running"}}])

    def test_resume_wakes_a_sandbox_frozen_for_idleness_with_a_call(self):
        def idle_agent(api, plural, obj):
            healthy_agent(api, plural, obj)
            if plural == "sandboxes" and not api.requests:  # frozen until a files call comes
                set_condition(obj, "Paused", "True", "Idle", "frozen after 60s without a command")
                obj["status"]["phase"] = "Paused"

        api = StubApi(idle_agent)
        sbx = sandbox(api).start()
        sbx.resume()
        self.assertEqual([(m, dict(p).get("op"), dict(p).get("path")) for m, p, _ in api.requests], [("GET", "stat", "/")])
        self.assertEqual(sbx.status()["phase"], "Running")

    def test_resume_reports_a_poisoned_topology(self):
        def poisoning(api, plural, obj):
            healthy_agent(api, plural, obj)
            if obj["spec"].get("lifecycle") == "Running" and obj["metadata"]["generation"] > 1:
                set_condition(obj, "TopologyPoisoned", "True", "ServiceExited", "service redis exited with code 1")

        api = StubApi(poisoning)
        sbx = sandbox(api).start()
        sbx.pause()
        with self.assertRaisesRegex(SandboxPoisoned, "ServiceExited: service redis exited"):
            sbx.resume()

    def test_the_with_block_deletes_even_when_it_raises(self):
        api = StubApi(healthy_agent)
        with self.assertRaises(KeyError):
            with sandbox(api):
                self.assertIn(("sandboxes", "py"), api.objects)
                raise KeyError("boom")
        self.assertEqual(api.objects, {})
        self.assertIn(("delete", "py"), api.verbs("sandboxes"))

    def test_start_without_an_image_says_so_and_creates_nothing(self):
        api = StubApi(healthy_agent)
        with self.assertRaisesRegex(ValueError, "start needs an image"):
            Sandbox(namespace="team", api=api).start()
        self.assertEqual(api.objects, {})

    def test_attach_to_a_missing_sandbox_says_so(self):
        with self.assertRaisesRegex(SandboxGone, "SandboxNotFound: Sandbox team/nope does not exist"):
            Sandbox.attach("nope", namespace="team", api=StubApi())


class CheckpointTest(unittest.TestCase):
    def test_checkpoint_returns_digest_and_size_and_restore_copies_the_spec(self):
        api = StubApi(checkpointing_agent)
        sbx = sandbox(api, memory_mb=256, services=["redis"]).start()
        api.objects[("sandboxes", "py")]["spec"]["nodeName"] = "n1"  # bound by the agent
        ckpt = sbx.checkpoint()
        self.assertEqual((ckpt.digest, ckpt.size_bytes, ckpt.node_name), ("sha256:" + "ab" * 32, 4096, "n1"))
        self.assertEqual(api.objects[("checkpoints", ckpt.name)]["spec"], {"sandboxName": "py"})

        copy = sbx.restore_into("py-copy")
        spec = api.objects[("sandboxes", "py-copy")]["spec"]
        self.assertEqual(spec["restoreFrom"], ckpt.name)
        self.assertEqual(spec["services"], ["redis"])
        self.assertEqual(spec["resources"], {"memory": "256Mi"})
        self.assertNotIn("nodeName", spec)
        copy.delete()
        ckpt.delete()
        sbx.delete()
        self.assertEqual(api.objects, {})

    def test_a_failed_checkpoint_says_why_and_is_deleted(self):
        def failing(api, plural, obj):
            healthy_agent(api, plural, obj)
            if plural == "checkpoints":
                obj["status"]["phase"] = "Failed"
                set_condition(obj, "Stalled", "True", "ArchiveTooLarge", "the workspace holds more than 1Gi")
                set_condition(obj, "Ready", "False", "ArchiveTooLarge", "the workspace holds more than 1Gi")

        api = StubApi(failing)
        sbx = sandbox(api).start()
        with self.assertRaisesRegex(CheckpointFailed, "ArchiveTooLarge: the workspace holds more than 1Gi"):
            sbx.checkpoint()
        self.assertEqual([k for k in api.objects if k[0] == "checkpoints"], [])

    def test_restore_into_takes_a_checkpoint_by_name(self):
        api = StubApi(checkpointing_agent)
        sbx = sandbox(api).start()
        ckpt = sbx.checkpoint()
        copy = sbx.restore_into("py-named", ckpt.name)
        self.assertEqual(api.objects[("sandboxes", "py-named")]["spec"]["restoreFrom"], ckpt.name)
        copy.delete()
        ckpt.delete()
        sbx.delete()
        self.assertEqual(api.objects, {})

    def test_restore_into_needs_a_checkpoint(self):
        with self.assertRaisesRegex(ValueError, "checkpoint"):
            sandbox(StubApi(healthy_agent)).start().restore_into("copy")


def pool_agent(api, plural, obj):
    """Binds a claim to the warm Sandbox shell-0 at once, giving it the claim's env, and deletes a claimed
    Sandbox whose claim is gone, as the agent does."""
    meta = obj["metadata"]
    if plural == "sandboxes":
        claim = (meta.get("labels") or {}).get("dockside.dev/claim")
        if claim and ("sandboxclaims", claim) not in api.objects:
            del api.objects[(plural, meta["name"])]
        return
    api.create(meta["namespace"], "sandboxes", {
        "metadata": {"name": "shell-0", "labels": {"dockside.dev/pool": "shell", "dockside.dev/claim": meta["name"]}},
        "spec": {"image": "dockside.dev/busybox:local", "commandEnv": obj["spec"].get("env", [])}})
    observe(obj)
    obj["status"].update(sandboxName="shell-0", start="Warm")
    set_condition(obj, "Ready", "True", "Claimed", "Sandbox shell-0 is Ready")


class ClaimTest(unittest.TestCase):
    def test_claim_takes_a_warm_sandbox_with_its_env_and_deleting_it_deletes_the_claim(self):
        api = StubApi(pool_agent)
        with Sandbox.claim("shell", env={"TASK_ID": 42}, labels={"team": "data"}, namespace="team", api=api,
                           ready_timeout=5) as sbx:
            self.assertEqual((sbx.name, sbx.start_kind), ("shell-0", "Warm"))
            body = api.calls[0][3]
            self.assertEqual(body["kind"], "SandboxClaim")
            self.assertEqual(body["metadata"], {"generateName": "shell-"})
            self.assertEqual(body["spec"], {"poolRef": {"name": "shell"}, "env": [{"name": "TASK_ID", "value": "42"}],
                                            "labels": {"team": "data"}})
            self.assertEqual(api.objects[("sandboxes", "shell-0")]["spec"]["commandEnv"],
                             [{"name": "TASK_ID", "value": "42"}])
        self.assertEqual(api.objects, {}, "the claim deleted, and its Sandbox with it")
        self.assertEqual(api.verbs("sandboxes"), [("create", "shell-0")], "the claim, not the client, deletes it")
        self.assertIn(("delete", next(name for verb, name in api.verbs("sandboxclaims") if verb == "create")),
                      api.verbs("sandboxclaims"))

    def test_a_claim_that_cannot_be_met_says_why_and_is_deleted(self):
        def refusing(api, plural, obj):
            observe(obj)
            set_condition(obj, "Stalled", "True", "OverrideNotAllowed", "the claim sets Labels, which the template refuses")

        api = StubApi(refusing)
        with self.assertRaises(SandboxFailed) as caught:
            Sandbox.claim("shell", name="task", labels={"team": "data"}, namespace="team", api=api, ready_timeout=5)
        self.assertEqual(caught.exception.reason, "OverrideNotAllowed")
        self.assertEqual(api.calls[0][3]["metadata"], {"name": "task"})
        self.assertEqual(api.objects, {})


class AsyncSandboxTest(unittest.TestCase):
    def test_async_with_starts_pauses_and_deletes(self):
        api = StubApi(healthy_agent)

        async def main():
            async with AsyncSandbox("dockside.dev/busybox:local", name="a", namespace="team", api=api) as sbx:
                await sbx.pause()
                await sbx.resume()
                return sbx.sync.status()["phase"]

        self.assertEqual(asyncio.run(main()), "Running")
        self.assertEqual(api.objects, {})

    def test_a_call_before_start_says_so(self):
        api = StubApi(healthy_agent)
        sbx = AsyncSandbox("dockside.dev/busybox:local", name="a", namespace="team", api=api)
        with self.assertRaisesRegex(RuntimeError, "not started: await start"):
            asyncio.run(sbx.pause())
        self.assertEqual(api.objects, {})


if __name__ == "__main__":
    unittest.main()
