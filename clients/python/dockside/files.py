"""sbx.files: the Sandbox's files through its files subresource (docs/design/dataplane-files.md): read, write,
list, stat, remove, make a directory, and directories in and out as tar streams. Bodies stream both ways; none
is held whole in memory except what read() returns."""

from __future__ import annotations

import io
import json
import os
import posixpath
import shutil
import tarfile
import tempfile
import threading
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, Dict, Generator, Iterator, List, Literal, Union, cast, overload

from urllib3.response import HTTPResponse

from .api import Api
from .dataplane import Body, Params, Transfer
from .errors import ApiError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

BLOCK = 1 << 20  # bytes per read of a streamed body
# Seconds without a byte either way before a call is given up (ApiError Stalled over an upgraded connection):
# the agent spools a body to disk before it answers, so a large upload's answer takes a while.
TIMEOUT = 300
# A body larger than this, or of unknown length, and every read travel over an upgraded connection, which the
# API server's --request-timeout (60 s by default) does not cut; a small write stays one plain request.
PLAIN_BODY = 1 << 20

# What a file may be written from: text (as UTF-8), bytes, or a binary file object sent as it is read.
Data = Union[str, bytes, bytearray, IO[bytes]]


class FileInfo:
    """What stat and list report of one path: name, path, size, mode (permission bits as an int), mtime (a
    datetime), type ("file", "dir", "symlink" or "other"), link (a symlink's target, else "")."""

    def __init__(self, parent: str, info: Dict[str, Any]) -> None:
        self.name: str = info["name"]
        self.path = posixpath.join(parent, self.name) if parent else self.name
        self.size: int = info.get("size", 0)
        self.mode = int(info.get("mode") or "0", 8)
        self.mtime = datetime.fromisoformat(info["mtime"].replace("Z", "+00:00")) if info.get("mtime") else None
        self.type: str = info.get("type", "other")
        self.link: str = info.get("link", "")

    def __repr__(self) -> str:
        return f"FileInfo({self.path!r}, type={self.type}, size={self.size}, mode={self.mode:04o})"


class Files:
    """The Sandbox's files, by absolute path in its primary container. Reading needs get on sandboxes/files in
    subresources.dockside.dev, every change create (dockside-edit has both, dockside-view neither). A refusal
    raises ApiError with the agent's reason and message (NotFound, Forbidden for the read-only root, Conflict
    for a paused Sandbox, InsufficientStorage for a full mount, RequestEntityTooLarge past one of the agent's
    bounds: a list of more than 10000 entries, a sparse file longer than its mount holds, ...)."""

    def __init__(self, api: Api, namespace: str, name: str, stopper: Stopper | None = None) -> None:
        self._api, self._namespace, self._name = api, namespace, name
        self._stopper = stopper

    @overload
    def read(self, path: str, format: Literal["text"] = "text") -> str: ...

    @overload
    def read(self, path: str, format: Literal["bytes"]) -> bytes: ...

    @overload
    def read(self, path: str, format: Literal["stream"]) -> Generator[bytes, None, None]: ...

    def read(self, path: str, format: str = "text") -> str | bytes | Generator[bytes, None, None]:
        """The file's contents: "text" (str, UTF-8), "bytes", or "stream" (an iterator of bytes blocks, for a
        file larger than memory; read it to the end or close it)."""
        if format not in ("text", "bytes", "stream"):
            raise ValueError(f'format={format!r}: "text", "bytes" or "stream"')
        blocks = self._transfer("GET", [("path", path)]).blocks()
        if format == "stream":
            return blocks
        data = b"".join(blocks)
        return data.decode("utf-8") if format == "text" else data

    def write(self, path: str, data: Data, mode: int | None = None) -> FileInfo:
        """Replaces the file at path with data (str as UTF-8, bytes, or a binary file object, sent as it is
        read), atomically: the agent writes a temporary file beside it and renames it. mode is the permission
        bits (e.g. 0o755). Returns the new file's FileInfo."""
        params = [("path", path)] + ([("mode", f"{mode:04o}")] if mode is not None else [])
        if isinstance(data, str):
            data = data.encode("utf-8")
        return self._put(path, params, data, length_header(data))

    def stat(self, path: str) -> FileInfo:
        """FileInfo of what is at path (a last symlink not followed); ApiError NotFound when nothing is."""
        return self._info(path, self._call("GET", [("op", "stat"), ("path", path)]))

    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def list(self, path: str) -> List[FileInfo]:
        """The entries of the directory at path, sorted by name, as FileInfo."""
        entries = json.loads(self._read_all(self._call("GET", [("op", "list"), ("path", path)])))
        return [FileInfo(path, e) for e in entries]

    def remove(self, path: str, recursive: bool = False) -> None:
        """Removes the file or empty directory at path; with recursive, a directory and all it holds."""
        params = [("path", path)] + ([("recursive", "true")] if recursive else [])
        self._read_all(self._call("DELETE", params))

    def make_dir(self, path: str, parents: bool = True) -> bool:
        """Makes the directory at path (and its parents with parents). True when it was made, False when it
        was there already (parents=True; without, that is an error as for mkdir)."""
        params = [("op", "mkdir"), ("path", path)] + ([("parents", "true")] if parents else [])
        resp = self._call("POST", params)
        self._read_all(resp)
        return resp.status == 201

    def upload(self, local_dir: str, remote_dir: str) -> FileInfo:
        """Copies the local directory's contents into remote_dir (made when missing) as one tar stream.
        The archive is built in a temporary file first, so an unreadable local file fails before anything is
        sent. Not atomic: an archive the agent refuses part way leaves the entries before that point."""
        if not os.path.isdir(local_dir):
            raise NotADirectoryError(f"{local_dir} is not a directory")
        with tempfile.TemporaryFile() as spool:
            with tarfile.open(fileobj=spool, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for entry in sorted(os.listdir(local_dir)):
                    tar.add(os.path.join(local_dir, entry), arcname=entry)
            spool.seek(0)
            self.make_dir(remote_dir)
            return self._put(remote_dir, [("op", "tar"), ("path", remote_dir)], spool,
                             length_header(spool, "application/x-tar"))

    def download(self, remote_dir: str, local_dir: str) -> List[str]:
        """Copies remote_dir's contents into local_dir (made when missing) from one tar stream, as it arrives.
        Every entry must land inside local_dir (no absolute names, no .., no link leading out); permission
        bits are kept, owners and set-uid bits are not. Returns the local paths written."""
        os.makedirs(local_dir, exist_ok=True)
        blocks = self._transfer("GET", [("op", "tar"), ("path", remote_dir)]).blocks()
        try:
            # tarfile's streamed mode only reads, which a raw binary file does as an IO[bytes] would.
            with tarfile.open(fileobj=cast(IO[bytes], BlockReader(blocks)), mode="r|") as tar:
                written = [extract(tar, member, local_dir) for member in tar]
            for _ in blocks:
                pass  # the archive's padding, then the agent's outcome: a failure raises
            return written
        finally:
            blocks.close()

    def _put(self, path: str, params: List[tuple[str, str]], body: Body, headers: Dict[str, str]) -> FileInfo:
        """PUTs body (bytes or a binary file object): plainly when small, else over an upgraded connection,
        block by block; a body cut short there leaves nothing written. Returns the FileInfo answered."""
        length = headers.get("Content-Length")
        if length is not None and int(length) <= PLAIN_BODY:
            return self._info(path, self._call("PUT", params, body=body, headers=headers))
        transfer = self._transfer("PUT", params + ([("length", length)] if length is not None else []))
        try:
            for block in pieces(body):
                transfer.send(block)
        except BaseException:  # the local file failed, or an interrupt: the agent drops what came
            transfer.abort()
            raise
        return FileInfo(posixpath.dirname(path), transfer.end())

    def _transfer(self, method: str, params: Params) -> Transfer:
        transfer = self._api.files_transfer(self._namespace, self._name, method, params, TIMEOUT)
        return self._stopper.opened(transfer) if self._stopper else transfer

    def _call(self, method: str, params: Params, body: Body | None = None,
              headers: Dict[str, str] | None = None) -> HTTPResponse:
        return self._api.files(self._namespace, self._name, method, params, body=body, headers=headers,
                               timeout=TIMEOUT)

    @staticmethod
    def _blocks(resp: HTTPResponse) -> Iterator[bytes]:
        try:
            yield from resp.stream(BLOCK)
        finally:
            resp.release_conn()

    def _read_all(self, resp: HTTPResponse) -> bytes:
        return b"".join(self._blocks(resp))

    def _info(self, path: str, resp: HTTPResponse) -> FileInfo:
        return FileInfo(posixpath.dirname(path), json.loads(self._read_all(resp)))


class Stopper:
    """Stops the files calls of one AsyncFiles call from another thread: stop() shuts the upgraded
    connections they opened, at once, and one opened after it is shut as it opens."""

    def __init__(self) -> None:
        self._lock, self._stopped = threading.Lock(), False
        self._open: List[Transfer] = []

    def opened(self, transfer: Transfer) -> Transfer:
        with self._lock:
            if not self._stopped:
                self._open.append(transfer)
                return transfer
        transfer.abort()
        raise ApiError("Cancelled", "the files call was cancelled")

    def stop(self) -> None:
        with self._lock:
            self._stopped, transfers = True, list(self._open)
        for transfer in transfers:
            transfer.abort()


class BlockReader(io.RawIOBase):
    """A binary file over an iterator of bytes blocks, for tarfile's streamed mode."""

    def __init__(self, blocks: Iterator[bytes]) -> None:
        self._blocks, self._rest = blocks, b""

    def readable(self) -> bool:
        return True

    def readinto(self, buf: WriteableBuffer) -> int:
        while not self._rest:
            self._rest = next(self._blocks, b"")
            if not self._rest:
                return 0
        with memoryview(buf) as view:
            n = min(len(view), len(self._rest))
            view[:n], self._rest = self._rest[:n], self._rest[n:]
        return n


def pieces(body: Body) -> Iterator[bytes | memoryview]:
    """body in blocks of at most BLOCK: views of bytes (no copy), or what a file object's reads return."""
    if isinstance(body, (bytes, bytearray)):
        view = memoryview(body)
        for offset in range(0, len(view), BLOCK):
            yield view[offset:offset + BLOCK]
        return
    while True:
        block = body.read(BLOCK)
        if not block:
            return
        yield block


def length_header(body: Body, content_type: str = "application/octet-stream") -> Dict[str, str]:
    """Content-Length of bytes or a seekable file from where it stands (an unseekable one goes chunked)."""
    headers = {"Content-Type": content_type}
    if isinstance(body, (bytes, bytearray)):
        headers["Content-Length"] = str(len(body))
    else:
        try:
            headers["Content-Length"] = str(os.fstat(body.fileno()).st_size - body.tell())
        except (AttributeError, OSError, ValueError):
            pass
    return headers


def inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def extract(tar: tarfile.TarFile, member: tarfile.TarInfo, local_dir: str) -> str:
    """Extracts one member of a streamed archive under local_dir, refusing one that would land outside it or
    write through a link leading out (each path is resolved through the links extracted before it)."""
    root = os.path.realpath(local_dir)
    name = posixpath.normpath(member.name)
    place = os.path.join(root, name)
    if posixpath.isabs(member.name) or name == ".." or name.startswith("../") or \
            not inside(root, os.path.realpath(os.path.dirname(place))):
        raise ApiError("BadArchive", f"the archive's entry {member.name!r} would land outside {local_dir}")
    if member.islnk() and not inside(root, os.path.realpath(os.path.join(root, member.linkname))):
        raise ApiError("BadArchive", f"the archive's hard link {member.name} leads outside {local_dir}")
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise ApiError("BadArchive", f"the archive's entry {member.name} is not a file, directory or link")
    if name == ".":
        return root  # local_dir keeps its own mode
    if os.path.lexists(place) and not (member.isdir() and os.path.isdir(place)):
        if os.path.isdir(place) and not os.path.islink(place):
            shutil.rmtree(place)
        else:
            os.remove(place)  # replaced, as tar -x replaces it (a link itself, never what it leads to)
    if not os.path.lexists(place):
        tar.extract(member, root, set_attrs=False)
    if not member.issym():
        os.chmod(place, member.mode & 0o777)
    return place
