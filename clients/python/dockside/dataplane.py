"""The data plane's wire: the aggregated API subresources.dockside.dev/v1alpha1, which the API server
authenticates, authorizes (RBAC on sandboxes/exec and sandboxes/files), audits and proxies to the agent
(docs/design/dataplane.md, dataplane-files.md). Exec is Kubernetes' WebSocket channel protocol, opened with the
Kubernetes client's own stream module (its TLS, client certificates, proxy and bearer token); files are plain
HTTP through the client's connection pool, streamed both ways."""

import json
from urllib.parse import quote, urlencode

from kubernetes.stream import ws_client
from urllib3.exceptions import HTTPError
from websocket import WebSocketBadStatusException, WebSocketException

from .errors import ApiError

GROUP = "subresources.dockside.dev"
VERSION = "v1alpha1"
# v5 is v4 plus a CLOSE signal that ends the command's stdin while its output goes on.
EXEC_PROTOCOL = "v5.channel.k8s.io"


def path(namespace, name, subresource):
    return f"/apis/{GROUP}/{VERSION}/namespaces/{quote(namespace)}/sandboxes/{quote(name)}/{subresource}"


def status_error(code, body, fallback):
    """ApiError from a refusal's body, a Kubernetes Status (reason and message) when it is one."""
    reason, message = fallback, body.decode("utf-8", "replace").strip() or fallback
    try:
        status = json.loads(body)
        reason, message = status.get("reason") or reason, status.get("message") or message
    except (ValueError, AttributeError):
        pass
    return ApiError(reason, message, status=code)


class Wire:
    """Opens exec streams and sends files requests for one Kubernetes ApiClient."""

    def __init__(self, api_client):
        self._client = api_client

    def _auth_headers(self):
        headers = {}
        # The bearer token, refreshed by the client's hook (exec credential plugins) as for any other call.
        self._client.update_params_for_auth(headers, [], ["BearerToken"])
        return headers

    def exec(self, namespace, name, argv, stdin, tty=False):
        """A connected websocket.WebSocket running argv in the Sandbox, its stdin open when stdin is true. Without
        tty its stdout and stderr are separate; with tty it runs on a terminal whose output is one stream
        (stdout) and whose size the resize channel sets. A refusal raises ApiError in the server's words."""
        query = [("command", list(argv)), ("stdin", "true" if stdin else "false"), ("stdout", "true"),
                 ("stderr", "false" if tty else "true"), ("tty", "true" if tty else "false")]
        url = ws_client.get_websocket_url(self._client.configuration.host + path(namespace, name, "exec"), query)
        headers = dict(self._auth_headers(), **{"sec-websocket-protocol": EXEC_PROTOCOL})
        try:
            return ws_client.create_websocket(self._client.configuration, url, headers)
        except WebSocketBadStatusException as exc:
            # The handshake's answer carries no body in websocket-client; the same GET without the upgrade
            # is refused by the same check, and its Status says why in the server's words.
            raise self._refusal(namespace, name, query, exc.status_code) from None
        except (WebSocketException, OSError) as exc:
            raise ApiError("ApiUnreachable", f"the exec stream could not be opened: {exc}") from None

    def _refusal(self, namespace, name, query, code):
        pairs = [(k, a) for k, v in query for a in (v if isinstance(v, list) else [v])]
        try:
            resp = self.request("GET", namespace, name, "exec", pairs, check=False)
            body = resp.read()
            resp.release_conn()
        except ApiError:
            body = b""
        return status_error(code, body, f"the exec stream was refused with HTTP {code}")

    def request(self, method, namespace, name, subresource, params, body=None, headers=None, timeout=None,
                check=True):
        """An urllib3 response to method on the Sandbox's subresource, its body not read yet (stream it, then
        release_conn). params are the query's (name, value) pairs; body is bytes or a file object (sent as it
        is read; give its Content-Length in headers). With check, a status of 400 or more raises ApiError with
        the server's reason and message."""
        url = self._client.configuration.host + path(namespace, name, subresource) + "?" + urlencode(params)
        try:
            resp = self._client.rest_client.pool_manager.urlopen(
                method, url, body=body, headers=dict(self._auth_headers(), **(headers or {})),
                preload_content=False, **({"timeout": timeout} if timeout else {}))
        except HTTPError as exc:
            raise ApiError("ApiUnreachable", f"the API server could not be reached: {exc}") from None
        if check and resp.status >= 400:
            data = resp.read()
            resp.release_conn()
            raise status_error(resp.status, data, f"HTTP {resp.status}")
        return resp
