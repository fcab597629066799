"""The W3C trace context the client sends with its data-plane requests, so that the agent's spans of a call
are children of the caller's (docs/tracing.md): the TRACEPARENT variable's when it holds a valid one (how a
calling program passes its span on), else a new sampled trace per call, its IDs drawn with os.urandom. No
OpenTelemetry package is needed."""

from __future__ import annotations

import os
import re

_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")


def _valid(value: str) -> bool:
    m = _TRACEPARENT.fullmatch(value)
    return m is not None and m.group(1) != "0" * 32 and m.group(2) != "0" * 16


def traceparent() -> str:
    """The traceparent header of one call."""
    given = os.environ.get("TRACEPARENT", "").strip().lower()
    if _valid(given):
        return given
    trace_id, span_id = "0" * 32, "0" * 16
    while trace_id == "0" * 32 or span_id == "0" * 16:
        trace_id, span_id = os.urandom(16).hex(), os.urandom(8).hex()
    return f"00-{trace_id}-{span_id}-01"
