"""A Checkpoint: a capture of a Sandbox's workspace, stored content-addressed by the agent of its node. It
outlives its Sandbox (that is what restoring is for) until it is deleted, which deletes the stored archive."""

from __future__ import annotations

from typing import Any, Iterable

from .api import API_VERSION, Api, Object
from .errors import CheckpointFailed, DocksideError
from .waiting import condition, is_true, wait_for

PLURAL = "checkpoints"


class Checkpoint:
    """A Ready Checkpoint: digest is the archive's sha256:<hex>, size_bytes its size, node_name where it is
    stored. A context manager: the with block deletes it on exit."""

    def __init__(self, api: Api, obj: Object) -> None:
        self._api = api
        meta, status = obj["metadata"], obj.get("status") or {}
        self.namespace, self.name, self.uid = meta["namespace"], meta["name"], meta["uid"]
        self.digest = status.get("digest", "")
        self.size_bytes = int(status.get("sizeBytes", 0))
        self.node_name = status.get("nodeName", "")

    def __repr__(self) -> str:
        return f"Checkpoint({self.namespace}/{self.name}, {self.digest}, {self.size_bytes} bytes)"

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.delete()

    def delete(self, timeout: float = 60) -> None:
        """Deletes the Checkpoint and waits until its agent has removed the archive (its finalizer)."""
        self._api.delete(self.namespace, PLURAL, self.name, self.uid)
        wait_for(self._api, self.namespace, PLURAL, self.name, self.uid, lambda c: c is None, timeout,
                 f"deleting Checkpoint {self.namespace}/{self.name}")


def take(api: Api, namespace: str, sandbox_name: str, name: str | None = None, paths: Iterable[str] | None = None,
         timeout: float = 300) -> Checkpoint:
    """Creates a Checkpoint of the Sandbox's workspace (paths in it, or all of it) and returns it once Ready.
    The Sandbox is frozen for the copy and thawed after it (a paused one stays paused)."""
    metadata = {"name": name} if name else {"generateName": sandbox_name + "-"}
    spec: dict[str, Any] = {"sandboxName": sandbox_name}
    if paths:
        spec["paths"] = list(paths)
    created = api.create(namespace, PLURAL, {"apiVersion": API_VERSION, "kind": "Checkpoint",
                                             "metadata": metadata, "spec": spec})
    meta = created["metadata"]

    def stored(ckpt: Object | None) -> bool:
        if ckpt is None:
            raise DocksideError("Deleted", f"Checkpoint {namespace}/{meta['name']} was deleted before it was Ready")
        if is_true(ckpt, "Stalled") or (ckpt.get("status") or {}).get("phase") == "Failed":
            ready = condition(ckpt, "Ready")
            raise CheckpointFailed(ready.get("reason", "Failed"), ready.get("message", ""))
        return is_true(ckpt, "Ready")

    try:
        done = wait_for(api, namespace, PLURAL, meta["name"], meta["uid"], stored, timeout,
                        f"Checkpoint {namespace}/{meta['name']} of Sandbox {sandbox_name}")
    except BaseException:
        api.delete(namespace, PLURAL, meta["name"], meta["uid"])  # the caller has no object to delete it by
        raise
    return Checkpoint(api, done)
