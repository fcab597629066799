import unittest

from dockside.spec import sandbox_body


class SandboxBodyTest(unittest.TestCase):
    def test_provider_arguments_become_the_spec(self):
        body = sandbox_body("dockside.dev/python:local", name="py", cpus=0.5, memory_mb=2048, pids_limit=128,
                            workspace_mb=256, network="isolated", allow=["pypi.org:443"],
                            env={"MODE": "test"}, secret_env={"TOKEN": ("api", "token")}, services=["redis"],
                            working_dir="/workspace", labels={"team": "a"})
        self.assertEqual(body["metadata"], {"name": "py", "labels": {"team": "a"}})
        self.assertEqual(body["spec"], {
            "image": "dockside.dev/python:local",
            "resources": {"cpu": "500m", "memory": "2048Mi", "pids": 128},
            "workspace": {"size": "256Mi"},
            "network": {"mode": "Isolated", "allow": ["pypi.org:443"]},
            "env": [{"name": "MODE", "value": "test"},
                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}}],
            "services": ["redis"],
            "workingDir": "/workspace",
        })

    def test_whole_cores_and_strings_are_quantities(self):
        self.assertEqual(sandbox_body("i", cpus=2.0)["spec"]["resources"], {"cpu": "2"})
        self.assertEqual(sandbox_body("i", cpus="250m")["spec"]["resources"], {"cpu": "250m"})

    def test_left_out_arguments_leave_the_api_server_defaults(self):
        body = sandbox_body("busybox")
        self.assertEqual(body["spec"], {"image": "busybox"})
        self.assertEqual(body["metadata"], {"generateName": "sandbox-"})

    def test_networks_dockside_cannot_express_are_refused(self):
        for network in ("host", "container:abc", "bridge"):
            with self.assertRaisesRegex(ValueError, "none, isolated, unrestricted"):
                sandbox_body("i", network=network)
        self.assertEqual(sandbox_body("i", network="None")["spec"]["network"], {"mode": "None"})

    def test_a_variable_in_both_env_and_secret_env_is_refused(self):
        with self.assertRaisesRegex(ValueError, "TOKEN"):
            sandbox_body("i", env={"TOKEN": "x"}, secret_env={"TOKEN": ("s", "k")})


if __name__ == "__main__":
    unittest.main()
