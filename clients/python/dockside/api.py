"""The few API calls the client makes, on Dockside's custom resources through the Kubernetes Python client,
and on the data plane's subresources (dataplane.py).
Everything else in the package talks to this class, so that unit tests replace it with a stub holding
objects in memory."""

from __future__ import annotations

import json
from typing import Any, Callable, Container, Dict, Iterator

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, ProtocolError, ReadTimeoutError
from urllib3.response import HTTPResponse
from websocket import WebSocket

from .dataplane import Body, Params, Transfer, Wire
from .errors import ApiError

GROUP = "dockside.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

# How long one watch request stays open (the server ends it then; the waiter reads again and watches on).
WATCH_SECONDS = 60

# A Kubernetes object as the API server's JSON: apiVersion, kind, metadata, spec, status.
Object = Dict[str, Any]


def api_error(exc: ApiException) -> ApiError:
    """ApiError from an ApiException: the Status the server sent (reason and message), never a stack."""
    reason, message = exc.reason or "Error", str(exc.reason or exc.status)
    try:
        status = json.loads(exc.body or "")
        reason, message = status.get("reason") or reason, status.get("message") or message
    except (ValueError, TypeError, AttributeError):
        pass
    return ApiError(reason, message, status=exc.status or 0)


def unreachable(exc: Exception) -> ApiError:
    return ApiError("ApiUnreachable", f"the API server could not be reached: {exc}")


class Api:
    """Get, create, patch, delete and watch namespaced Dockside objects (plural: sandboxes, executions,
    checkpoints). get returns None for an object that does not exist, delete ignores one."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        self._wire = Wire(api_client)

    def exec(self, namespace: str, name: str, argv: list[str], stdin: bool, tty: bool = False) -> WebSocket:
        """A connected exec stream (a websocket.WebSocket) running argv in the Sandbox (dataplane.py)."""
        return self._wire.exec(namespace, name, argv, stdin, tty)

    def files(self, namespace: str, name: str, method: str, params: Params, body: Body | None = None,
              headers: dict[str, str] | None = None, timeout: float | None = None) -> HTTPResponse:
        """The streamed response of a files request on the Sandbox (dataplane.py)."""
        return self._wire.request(method, namespace, name, "files", params, body=body, headers=headers,
                                  timeout=timeout)

    def files_transfer(self, namespace: str, name: str, method: str, params: Params, timeout: float) -> Transfer:
        """A files call on the Sandbox over an upgraded connection (dataplane.Transfer), given up after timeout
        seconds without a byte."""
        return self._wire.transfer(namespace, name, method, params, timeout)

    def processes(self, namespace: str, name: str, method: str, sub: str, params: Params, body: Body | None = None,
                  timeout: float | None = None) -> HTTPResponse:
        """The streamed response of a call on the Sandbox's processes subresource: sub is "" or "/ID[/what]"
        (dataplane.py)."""
        return self._wire.request(method, namespace, name, "processes" + sub, params, body=body, timeout=timeout)

    def get(self, namespace: str, plural: str, name: str) -> Object | None:
        return self._call(self._custom.get_namespaced_custom_object, GROUP, VERSION, namespace, plural, name,
                          missing=(404,))

    def create(self, namespace: str, plural: str, body: Object) -> Object:
        return self._call(self._custom.create_namespaced_custom_object, GROUP, VERSION, namespace, plural, body)

    def patch(self, namespace: str, plural: str, name: str, body: Object) -> Object:
        """A JSON merge patch of body (the content type this client sends for custom objects)."""
        return self._call(self._custom.patch_namespaced_custom_object, GROUP, VERSION, namespace, plural, name,
                          body)

    def delete(self, namespace: str, plural: str, name: str, uid: str | None = None) -> None:
        """Deletes the object, only if it still has uid when one is given: a 409 means another object of the
        name is there now, which is not ours to delete."""
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid) if uid else None)
        self._call(self._custom.delete_namespaced_custom_object, GROUP, VERSION, namespace, plural, name,
                   body=options, missing=(404, 409))

    @staticmethod
    def _call(fn: Callable[..., Any], *args: Any, missing: Container[int] = (), **kwargs: Any) -> Any:
        """fn's answer, None for a status in missing, an ApiError for any other failure."""
        try:
            return fn(*args, **kwargs)
        except ApiException as exc:
            if exc.status in missing:
                return None
            raise api_error(exc) from None
        except HTTPError as exc:
            raise unreachable(exc) from None

    def watch(self, namespace: str, plural: str, name: str, resource_version: str,
              seconds: float) -> Iterator[tuple[str, Object]]:
        """Yields (event type, object) for the named object from resource_version on, for at most seconds.
        It ends early when the server closes the watch or the version is too old to watch from (410)."""
        w = watch.Watch()
        try:
            for event in w.stream(self._custom.list_namespaced_custom_object, GROUP, VERSION, namespace, plural,
                                  field_selector=f"metadata.name={name}", resource_version=resource_version,
                                  timeout_seconds=max(1, int(seconds)), _request_timeout=seconds + 30):
                yield event["type"], event["object"]
        except ApiException as exc:
            if exc.status == 410:
                return
            raise api_error(exc) from None
        except (ProtocolError, ReadTimeoutError):
            return  # the connection ended: the waiter reads the object again
        except HTTPError as exc:
            raise unreachable(exc) from None
        finally:
            w.stop()
