"""The data plane's wire: the aggregated API subresources.dockside.dev/v1alpha1, which the API server
authenticates, authorizes (RBAC on sandboxes/exec and sandboxes/files), audits and proxies to the agent
(docs/design/dataplane.md, dataplane-files.md). Exec is Kubernetes' WebSocket channel protocol, opened with the
Kubernetes client's own stream module (its TLS, client certificates, proxy and bearer token); files are plain
HTTP through the client's connection pool, and a large body travels over a connection upgraded the same way
(Transfer), which the API server's request timeout does not cut."""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from typing import IO, Any, Generator, Mapping, Sequence, Tuple, Union
from urllib.parse import quote, urlencode

from kubernetes.client import ApiClient
from kubernetes.stream import ws_client
from urllib3.exceptions import HTTPError
from urllib3.response import HTTPResponse
from websocket import (ABNF, WebSocket, WebSocketBadStatusException, WebSocketConnectionClosedException,
                       WebSocketException, WebSocketTimeoutException)

from .errors import ApiError
from .tracecontext import traceparent

GROUP = "subresources.dockside.dev"
VERSION = "v1alpha1"
# v5 is v4 plus a CLOSE signal that ends the command's stdin while its output goes on.
EXEC_PROTOCOL = "v5.channel.k8s.io"
# An upgraded files call: binary messages carry the body, "end" ends an upload, and the agent's last message
# (text) is its outcome, a FileInfo or a Status (docs/design/dataplane-files.md).
FILES_PROTOCOL = "v1.files.dockside.dev"
END_OF_BODY = "end"
# kube-apiserver's aggregator answers a data plane call 503 with this body (text/plain) itself, without
# forwarding it, while a discovery check of the APIService went unanswered (docs/status.md). Nothing reached an
# agent then, so the call is sent again, whatever it does, after each of these waits (7.5 s in all); then the
# answer stands. Any other 503 (the agent's own, a Status) is not: that call may have run a command.
AGGREGATOR_UNAVAILABLE = b"service unavailable\n"
UNAVAILABLE_WAITS: Tuple[float, ...] = (0.5, 1, 2, 4)
# Bytes masked and sent at a time within one binary message: a larger piece makes Python allocate (and the
# kernel fault in) fresh memory for each of its copies, which costs more than the masking itself.
MASK_PIECE = 64 << 10

# A query's (name, value) pairs.
Params = Sequence[Tuple[str, str]]
# A request's body: bytes, or a binary file object sent as it is read.
Body = Union[bytes, bytearray, IO[bytes]]


def path(namespace: str, name: str, subresource: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{quote(namespace)}/sandboxes/{quote(name)}/{subresource}"


def aggregator_unavailable(code: int, headers: Mapping[str, str]) -> bool:
    """Whether an answer's status and headers are the aggregator's own 503: http.Error's text/plain of exactly
    AGGREGATOR_UNAVAILABLE, where the agent answers a JSON Status."""
    headers = {k.lower(): v for k, v in headers.items()}
    return code == 503 and headers.get("content-type", "").startswith("text/plain") and \
        headers.get("content-length") == str(len(AGGREGATOR_UNAVAILABLE))


def unavailable_error(tries: int, waited: float) -> ApiError:
    return ApiError("ServiceUnavailable", f'the API server\'s aggregator answered "service unavailable" {tries} times '
                    f"over {waited:g}s: it holds the data plane's APIService v1alpha1.subresources.dockside.dev "
                    "unavailable (kubectl get apiservice v1alpha1.subresources.dockside.dev says why)", status=503)


def status_error(code: int, body: bytes, fallback: str) -> ApiError:
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

    def __init__(self, api_client: ApiClient) -> None:
        self._client = api_client

    def _headers(self) -> dict[str, str]:
        """The headers of every call: its trace context and the bearer token."""
        headers = {"traceparent": traceparent()}
        # The bearer token, refreshed by the client's hook (exec credential plugins) as for any other call.
        self._client.update_params_for_auth(headers, [], ["BearerToken"])
        return headers

    def exec(self, namespace: str, name: str, argv: list[str], stdin: bool, tty: bool = False) -> WebSocket:
        """A connected websocket.WebSocket running argv in the Sandbox, its stdin open when stdin is true. Without
        tty its stdout and stderr are separate; with tty it runs on a terminal whose output is one stream
        (stdout) and whose size the resize channel sets. A refusal raises ApiError in the server's words."""
        query: list[tuple[str, str | list[str]]] = [
            ("command", list(argv)), ("stdin", "true" if stdin else "false"), ("stdout", "true"),
            ("stderr", "false" if tty else "true"), ("tty", "true" if tty else "false")]
        url = ws_client.get_websocket_url(self._client.configuration.host + path(namespace, name, "exec"), query)
        try:
            return self._upgrade(url, EXEC_PROTOCOL)
        except WebSocketBadStatusException as exc:
            # The handshake's answer carries no body in websocket-client; the same GET without the upgrade
            # is refused by the same check, and its Status says why in the server's words.
            raise self._refusal(namespace, name, query, exc.status_code) from None
        except (WebSocketException, OSError) as exc:
            raise ApiError("ApiUnreachable", f"the exec stream could not be opened: {exc}") from None

    def transfer(self, namespace: str, name: str, method: str, params: Params, timeout: float) -> Transfer:
        """A Transfer of the files call (method, params) over an upgraded connection, given up when no byte
        moves either way for timeout seconds. A WebSocket handshake is a GET: the call names its method in the
        query. A refusal raises ApiError in the server's words."""
        query = list(params) + ([("method", method)] if method != "GET" else [])
        url = ws_client.get_websocket_url(self._client.configuration.host + path(namespace, name, "files"), query)
        try:
            ws = self._upgrade(url, FILES_PROTOCOL)
            ws.settimeout(timeout)
            return Transfer(ws, timeout)
        except WebSocketBadStatusException as exc:
            # The same call without the upgrade runs the same checks and says why; past them it is refused
            # before it moves a body (an upload named by method= needs the upgrade).
            raise self._refusal(namespace, name, query, exc.status_code, "files") from None
        except (WebSocketException, OSError) as exc:
            raise ApiError("ApiUnreachable", f"the files call could not be opened: {exc}") from None

    def _upgrade(self, url: str, protocol: str) -> WebSocket:
        """A WebSocket connected to url with protocol, sent again while the aggregator answers unavailable
        (websocket-client reads no body of a refused handshake: its headers tell)."""
        for wait in UNAVAILABLE_WAITS + (None,):
            headers = dict(self._headers(), **{"sec-websocket-protocol": protocol})
            try:
                return ws_client.create_websocket(self._client.configuration, url, headers)
            except WebSocketBadStatusException as exc:
                if not aggregator_unavailable(exc.status_code, exc.resp_headers or {}):
                    raise
                if wait is None:
                    raise unavailable_error(len(UNAVAILABLE_WAITS) + 1, sum(UNAVAILABLE_WAITS)) from None
            time.sleep(wait)
        raise AssertionError("unreachable: the last try returns or raises")

    def _refusal(self, namespace: str, name: str, query: Sequence[tuple[str, str | list[str]]], code: int,
                 subresource: str = "exec") -> ApiError:
        pairs = [(k, a) for k, v in query for a in (v if isinstance(v, list) else [v])]
        try:
            resp = self.request("GET", namespace, name, subresource, pairs, check=False)
            body = resp.read()
            resp.release_conn()
        except ApiError:
            body = b""
        return status_error(code, body, f"the {subresource} call was refused with HTTP {code}")

    def request(self, method: str, namespace: str, name: str, subresource: str, params: Params,
                body: Body | None = None, headers: Mapping[str, str] | None = None, timeout: float | None = None,
                check: bool = True) -> HTTPResponse:
        """An urllib3 response to method on the Sandbox's subresource, its body not read yet (stream it, then
        release_conn). params are the query's (name, value) pairs; body is bytes or a file object (sent as it
        is read; give its Content-Length in headers). With check, a status of 400 or more raises ApiError with
        the server's reason and message."""
        url = self._client.configuration.host + path(namespace, name, subresource) + "?" + urlencode(params)
        # A body of bytes can be sent again; a file object's was read by the first try.
        waits: tuple[float, ...] = UNAVAILABLE_WAITS if body is None or isinstance(body, (bytes, bytearray)) else ()
        for wait in waits + (None,):
            try:
                resp = self._client.rest_client.pool_manager.urlopen(
                    method, url, body=body, headers=dict(self._headers(), **(headers or {})),
                    preload_content=False, **({"timeout": timeout} if timeout else {}))
            except HTTPError as exc:
                raise ApiError("ApiUnreachable", f"the API server could not be reached: {exc}") from None
            if wait is None or not aggregator_unavailable(resp.status, resp.headers):
                break
            resp.read()
            resp.release_conn()
            time.sleep(wait)
        if waits and aggregator_unavailable(resp.status, resp.headers):
            resp.read()
            resp.release_conn()
            raise unavailable_error(len(waits) + 1, sum(waits))
        if check and resp.status >= 400:
            data = resp.read()
            resp.release_conn()
            raise status_error(resp.status, data, f"HTTP {resp.status}")
        return resp


class Transfer:
    """One upgraded files call: send() the body's blocks and end(), or iterate blocks(); both end with the
    agent's outcome, whose failure raises ApiError. A call that stops part way (an error, a KeyboardInterrupt,
    abort() from another thread) shuts its connection at once, which the agent takes as the call's end."""

    def __init__(self, ws: WebSocket, timeout: float) -> None:
        self._ws, self._timeout = ws, timeout

    def send(self, block: bytes | bytearray | memoryview) -> None:
        """Sends block (bytes, or a memoryview of them) as one binary message, framed and masked here rather
        than by websocket-client, whose ABNF.format masks a memoryview byte by byte in Python and copies a
        block of bytes three times: a 10 MiB write spent most of its time there (docs/design/dataplane-files.md,
        "Speed")."""
        key = os.urandom(4)  # a fresh unpredictable masking key for each message, as RFC 6455 5.3 asks
        view = memoryview(block)
        try:
            sock = self._ws.sock
            if sock is None:
                raise WebSocketConnectionClosedException("the connection was shut")
            sock.sendall(frame_header(len(view), key))
            for offset in range(0, len(view), MASK_PIECE):
                sock.sendall(masked(view[offset:offset + MASK_PIECE], key))
        except socket.timeout:  # sendall gave up: nothing moved for the connection's timeout
            self.abort()
            raise self._stalled() from None
        except (WebSocketException, OSError):
            self.outcome()  # the agent ended the call (a full mount): its outcome says why
            raise
        except BaseException:
            self.abort()
            raise

    def end(self) -> dict[str, Any]:
        """Ends the upload and returns the agent's answer (a FileInfo's JSON)."""
        self._ws.send(END_OF_BODY)
        return self.outcome()

    def blocks(self) -> Generator[bytes, None, None]:
        """The body's blocks as they come; the agent's Success ends them, anything else raises."""
        try:
            while True:
                opcode, data = self._next()
                if opcode != ABNF.OPCODE_BINARY:
                    self._answer(data)
                    break
                yield data
        except BaseException:  # a failure, an interrupt, or the caller closing the generator part way
            self.abort()
            raise
        self.close()

    def outcome(self) -> dict[str, Any]:
        try:
            while True:
                opcode, data = self._next()
                if opcode != ABNF.OPCODE_BINARY:
                    answer = self._answer(data)
                    break
        except BaseException:
            self.abort()
            raise
        self.close()
        return answer

    def _next(self) -> tuple[int, bytes]:
        try:
            opcode, data = self._ws.recv_data()
        except WebSocketTimeoutException:
            raise self._stalled() from None
        except (WebSocketException, OSError) as exc:
            raise ApiError("BrokenOff", f"the connection broke off before the agent said how the call ended: {exc}") from None
        if opcode == ABNF.OPCODE_CLOSE:
            raise ApiError("BrokenOff", "the connection closed before the agent said how the call ended")
        return opcode, data

    def _stalled(self) -> ApiError:
        return ApiError("Stalled", f"no byte moved for {self._timeout}s: the files call was given up")

    @staticmethod
    def _answer(data: bytes) -> dict[str, Any]:
        answer = json.loads(data)
        if answer.get("kind") == "Status" and answer.get("status") != "Success":
            raise status_error(answer.get("code", 500), data, "Failure")
        return answer

    def close(self) -> None:
        """Ends a call whose outcome came: the closing handshake, bounded by the connection's timeout."""
        self._ws.close(timeout=1)

    def abort(self) -> None:
        """Shuts the connection at once; thread-safe: a recv or send blocked in another thread ends with it."""
        sock = self._ws.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # closed already
        self._ws.shutdown()


def frame_header(length: int, key: bytes) -> bytes:
    """The header of a final, masked binary WebSocket frame of length bytes with masking key key (RFC 6455
    5.2): the length in 7 bits, or 126 and 16 bits, or 127 and 64 bits."""
    first = 0x80 | ABNF.OPCODE_BINARY
    if length < 126:
        return struct.pack("!BB", first, 0x80 | length) + key
    if length < 1 << 16:
        return struct.pack("!BBH", first, 0x80 | 126, length) + key
    return struct.pack("!BBQ", first, 0x80 | 127, length) + key


def masked(piece: bytes | memoryview, key: bytes) -> bytes:
    """piece XORed with key repeated from its first byte (so a piece after the first must start at a multiple
    of 4 within its message), as two big integers: each conversion is one pass in C."""
    n = len(piece)
    mask = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(piece, "little") ^ int.from_bytes(mask, "little")).to_bytes(n, "little")
