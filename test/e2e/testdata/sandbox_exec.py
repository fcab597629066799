"""Exec into a Sandbox with the Python Kubernetes client's stream module, unchanged, as into a pod.

usage: sandbox_exec.py KUBECONFIG NAMESPACE SANDBOX COMMAND...
Prints one JSON object: stdout, stderr and the exit code the client read from the error channel.
"""
import json
import sys

from kubernetes import client, config
from kubernetes.stream import stream


class SandboxExec:
    """The one method stream() needs: a generated-client-like call of the Sandbox's exec subresource."""

    def __init__(self, api_client):
        self.api_client = api_client

    def connect_get_namespaced_sandbox_exec(self, name, namespace, command, **kwargs):
        path = "/apis/subresources.dockside.dev/v1alpha1/namespaces/{}/sandboxes/{}/exec".format(namespace, name)
        query = [("command", c) for c in command] + [("stdin", "false"), ("stdout", "true"), ("stderr", "true"), ("tty", "false")]
        return self.api_client.call_api(
            path, "GET", query_params=query, auth_settings=["BearerToken"], response_type="str", _return_http_data_only=True,
            _preload_content=kwargs.get("_preload_content", True), _request_timeout=kwargs.get("_request_timeout"))


def main():
    kubeconfig, namespace, sandbox, command = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    config.load_kube_config(kubeconfig)
    api = SandboxExec(client.ApiClient())
    resp = stream(api.connect_get_namespaced_sandbox_exec, sandbox, namespace, command=command, _preload_content=False)
    out, err = [], []
    while resp.is_open():
        resp.update(timeout=5)
        if resp.peek_stdout():
            out.append(resp.read_stdout())
        if resp.peek_stderr():
            err.append(resp.read_stderr())
    resp.close()
    print(json.dumps({"stdout": "".join(out), "stderr": "".join(err), "exitCode": resp.returncode}))


if __name__ == "__main__":
    main()
