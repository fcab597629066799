"""Waiting for an object to reach a state: read it, then watch it from the version read, and read again
whenever a watch ends, until a check says it is done or fails, or the time is up. The same loop as
pkg/execution's wait in Go."""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from .api import WATCH_SECONDS, Api, Object
from .errors import WaitTimeout

# A check of wait_for: given the object, or None once it is gone, whether it is done.
Check = Callable[[Optional[Object]], bool]


def condition(obj: Object | None, kind: str) -> dict[str, Any]:
    """The status condition of type kind, or {} when the object has none."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c
    return {}


def is_true(obj: Object | None, kind: str) -> bool:
    return condition(obj, kind).get("status") == "True"


def wait_for(api: Api, namespace: str, plural: str, name: str, uid: str | None, check: Check, timeout: float,
             what: str) -> Object:
    """Returns the object once check(obj) is true ({} when that was check(None), the object gone). check is
    given None when the object is gone (deleted, or replaced by another of the same name) and raises the error
    that says why it cannot get there. When timeout seconds pass first, WaitTimeout says what was waited for
    and the last state seen."""
    deadline = time.monotonic() + timeout
    while True:
        obj = api.get(namespace, plural, name)
        current = obj if obj is not None and (uid is None or obj["metadata"]["uid"] == uid) else None
        if check(current):
            return current if current is not None else {}
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout("Timeout", f"{what}: not done after {timeout:g}s; last state: {summary(current)}")
        if current is None:  # check waits for it to come back (none does so far): read again shortly
            time.sleep(min(remaining, 0.5))
            continue
        version = current["metadata"]["resourceVersion"]
        for event_type, event_obj in api.watch(namespace, plural, name, version, min(remaining, WATCH_SECONDS)):
            if event_obj.get("metadata", {}).get("uid") != current["metadata"]["uid"]:
                continue
            if event_type == "DELETED":
                break  # read again: check sees it gone
            if check(event_obj):
                return event_obj
        # The watch ended (time up, closed by the server, or the object deleted): read it again.


def summary(obj: Object | None) -> str:
    """One line of what an object's status says, for a timeout's message."""
    if obj is None:
        return "gone"
    status = obj.get("status") or {}
    ready = condition(obj, "Ready")
    parts = [f"phase {status.get('phase') or 'unset'}"]
    if ready:
        parts.append(f"Ready={ready.get('status')} {ready.get('reason', '')}: {ready.get('message', '')}".rstrip(": "))
    return ", ".join(parts)
