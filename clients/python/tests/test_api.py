import json
import os
import tempfile
import traceback
import unittest
from unittest import mock

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError

from dockside import ApiError
from dockside.api import Api
from dockside.config import connect

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: me
  user: {token: abc}
contexts:
- name: team-a
  context: {cluster: local, user: me, namespace: team-a}
- name: bare
  context: {cluster: local, user: me}
current-context: team-a
"""


class ApiErrorTest(unittest.TestCase):
    def refused(self, exc):
        api = Api(None)
        api._custom = mock.Mock()
        api._custom.create_namespaced_custom_object.side_effect = exc
        with self.assertRaises(ApiError) as caught:
            api.create("team", "sandboxes", {})
        return caught.exception

    def test_a_refusal_is_the_servers_reason_and_message_without_the_client_stack(self):
        status = {"kind": "Status", "reason": "Forbidden", "code": 403,
                  "message": 'sandboxes.dockside.dev is forbidden: User "bob" cannot create resource "sandboxes"'}
        exc = ApiException(status=403, reason="Forbidden")
        exc.body = json.dumps(status)
        err = self.refused(exc)
        self.assertEqual((err.reason, err.status), ("Forbidden", 403))
        self.assertEqual(str(err), "Forbidden: " + status["message"])
        self.assertTrue(err.__suppress_context__)
        self.assertNotIn("ApiException", "".join(traceback.format_exception(err)))

    def test_a_validation_message_reaches_the_caller(self):
        exc = ApiException(status=422, reason="Unprocessable Entity")
        exc.body = json.dumps({"reason": "Invalid", "message": "spec.network.mode: Unsupported value: \"Host\""})
        self.assertEqual(str(self.refused(exc)), 'Invalid: spec.network.mode: Unsupported value: "Host"')

    def test_an_unreachable_server_says_so(self):
        err = self.refused(MaxRetryError(None, "/apis", "connection refused"))
        self.assertEqual(err.reason, "ApiUnreachable")

    def test_a_missing_object_is_none_and_deleting_it_is_not_an_error(self):
        api = Api(None)
        api._custom = mock.Mock()
        api._custom.get_namespaced_custom_object.side_effect = ApiException(status=404, reason="Not Found")
        api._custom.delete_namespaced_custom_object.side_effect = ApiException(status=404, reason="Not Found")
        self.assertIsNone(api.get("team", "sandboxes", "gone"))
        api.delete("team", "sandboxes", "gone", uid="u1")
        options = api._custom.delete_namespaced_custom_object.call_args.kwargs["body"]
        self.assertEqual(options.preconditions.uid, "u1")


class ConfigTest(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp()
        with os.fdopen(fd, "w") as f:
            f.write(KUBECONFIG)
        self.addCleanup(os.remove, self.path)

    def test_the_namespace_is_the_contexts_as_for_kubectl(self):
        self.assertEqual(connect(kubeconfig=self.path)[1], "team-a")
        self.assertEqual(connect(kubeconfig=self.path, context="bare")[1], "default")
        self.assertEqual(connect(kubeconfig=self.path, namespace="other")[1], "other")

    def test_kubeconfig_env_is_read(self):
        with mock.patch.dict(os.environ, {"KUBECONFIG": self.path}):
            api, namespace = connect()
        self.assertEqual(namespace, "team-a")
        self.assertEqual(api._custom.api_client.configuration.host, "https://127.0.0.1:6443")

    def test_no_configuration_at_all_says_so(self):
        with mock.patch.dict(os.environ, {"KUBECONFIG": "", "HOME": tempfile.gettempdir() + "/nohome"}):
            os.environ.pop("KUBERNETES_SERVICE_HOST", None)
            with self.assertRaisesRegex(ApiError, "NoConfiguration: no cluster to talk to"):
                connect()


if __name__ == "__main__":
    unittest.main()
