"""Runs one command in a session Sandbox through an Execution, as pkg/execution does in Go: create it (owned
by the Sandbox), wait until it has ended, read its result, delete it. Nothing is retried: a command that may
have run has run."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from .api import API_VERSION, Api, Object
from .commandio import Input
from .errors import DocksideError, ExecutionDeadlineExceeded, SandboxGone, SandboxNotReady, SandboxPoisoned
from .waiting import condition, is_true, wait_for

PLURAL = "executions"

# How long run waits, beyond the command's own timeout, for an Execution queued behind others or behind a
# paused Sandbox, or for an agent on a busy node to report it.
QUEUE_SECONDS = 120


@dataclass(frozen=True)
class Result:
    """How a command of Sandbox.run ended, through the data plane or an Execution alike. reason is Completed
    (exit code 0), Error (another exit code) or OutputLimitExceeded (output past the cap was cut and counted;
    exit_code is the command's own)."""

    name: str  # of the Execution; "" when none was made (run's default path, fastpath.py)
    reason: str
    message: str
    exit_code: Optional[int]
    stdout: str
    stderr: str
    stdout_truncated_bytes: int
    stderr_truncated_bytes: int
    sandbox_killed: bool

    @property
    def ok(self) -> bool:
        return self.reason == "Completed"


def execution_body(sandbox: Object, command: Sequence[object], stdin: str | None, timeout: float,
                   env: Mapping[str, object] | None, working_dir: str | None, max_output_bytes: int | None) -> Object:
    spec: dict[str, Any] = {"sandboxName": sandbox["metadata"]["name"], "command": [str(a) for a in command],
            "timeoutSeconds": max(1, math.ceil(timeout))}
    if stdin:
        spec["stdin"] = stdin
    if env:
        spec["env"] = [{"name": k, "value": str(v)} for k, v in sorted(env.items())]
    if working_dir:
        spec["workingDir"] = working_dir
    if max_output_bytes:
        spec["maxOutputBytes"] = int(max_output_bytes)
    owner = {"apiVersion": API_VERSION, "kind": "Sandbox", "name": sandbox["metadata"]["name"],
             "uid": sandbox["metadata"]["uid"], "controller": True}
    metadata = {"generateName": sandbox["metadata"]["name"] + "-", "ownerReferences": [owner]}
    return {"apiVersion": API_VERSION, "kind": "Execution", "metadata": metadata, "spec": spec}


def text_stdin(stdin: Input | None) -> str | None:
    """stdin as an Execution takes it: text (the API server refuses more than 64 KiB of it)."""
    if stdin is not None and not isinstance(stdin, str):
        raise TypeError("an Execution's stdin is text: with record=True give stdin as a str (at most 64 KiB)")
    return stdin


def run(api: Api, namespace: str, sandbox_name: str, command: Sequence[object], stdin: str | None = None,
        timeout: float = 60, env: Mapping[str, object] | None = None, working_dir: str | None = None,
        max_output_bytes: int | None = None, keep: bool = False, queue_seconds: float = QUEUE_SECONDS) -> Result:
    """The Result of command (argv, no shell) run in the Sandbox, with stdin written to it. timeout is the
    host-enforced deadline in seconds (rounded up). A non-zero exit is a Result; a deadline, a poisoned or
    gone Sandbox raise (see errors.py). Should the client give up waiting (or be interrupted), it deletes the
    Execution, which stops the command."""
    name, uid = submit(api, namespace, sandbox_name, command, stdin, timeout, env, working_dir, max_output_bytes)
    return collect(api, namespace, sandbox_name, name, uid, timeout, keep, queue_seconds)


def submit(api: Api, namespace: str, sandbox_name: str, command: Sequence[object], stdin: str | None = None,
           timeout: float = 60, env: Mapping[str, object] | None = None, working_dir: str | None = None,
           max_output_bytes: int | None = None) -> tuple[str, str]:
    """Creates the Execution of command and returns its (name, uid); delete it to stop the command."""
    if isinstance(command, str):
        raise TypeError("command is an argv list, run without a shell: use ['sh', '-c', '...'] for shell syntax")
    sandbox = api.get(namespace, "sandboxes", sandbox_name)
    if sandbox is None:
        raise SandboxGone("SandboxNotFound", f"Sandbox {namespace}/{sandbox_name} does not exist")
    created = api.create(namespace, PLURAL, execution_body(sandbox, command, stdin, timeout, env, working_dir,
                                                           max_output_bytes))
    return created["metadata"]["name"], created["metadata"]["uid"]


def collect(api: Api, namespace: str, sandbox_name: str, name: str, uid: str, timeout: float = 60, keep: bool = False,
            queue_seconds: float = QUEUE_SECONDS) -> Result:
    """Waits for Execution name to end and returns its Result (see run)."""
    try:
        done = wait_for(api, namespace, PLURAL, name, uid, ended(name), timeout + queue_seconds,
                        f"Execution {namespace}/{name} in Sandbox {sandbox_name}")
    except BaseException:
        api.delete(namespace, PLURAL, name, uid)  # stops the command, or keeps it from starting
        raise
    if not keep:
        api.delete(namespace, PLURAL, name, uid)
    return outcome(api, namespace, sandbox_name, result(done))


def ended(name: str) -> Callable[[Optional[Object]], bool]:
    def check(ex: Object | None) -> bool:
        if ex is None:
            raise DocksideError("Deleted", f"Execution {name} was deleted before it ended")
        return (ex.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    return check


def result(ex: Object) -> Result:
    st = ex.get("status") or {}
    return Result(
        name=ex["metadata"]["name"], reason=st.get("reason", ""), message=st.get("message", ""),
        exit_code=st.get("exitCode"), stdout=st.get("stdout", ""), stderr=st.get("stderr", ""),
        stdout_truncated_bytes=int(st.get("stdoutTruncatedBytes", 0)),
        stderr_truncated_bytes=int(st.get("stderrTruncatedBytes", 0)),
        sandbox_killed=bool(st.get("sandboxKilled", False)))


def outcome(api: Api, namespace: str, sandbox_name: str, res: Result) -> Result:
    """res, or the error that says why the command did not end on its own in a Sandbox that can go on."""
    if res.reason == "DeadlineExceeded":
        raise ExecutionDeadlineExceeded(res.reason, res.message, res)
    if res.sandbox_killed:
        raise SandboxPoisoned(res.reason, res.message, res)
    if res.reason == "SandboxNotFound":
        raise SandboxGone(res.reason, res.message, res)
    if res.reason in ("SandboxNotReady", "Canceled", "Lost"):
        raise gone_or_poisoned(api, namespace, sandbox_name, res) or SandboxNotReady(res.reason, res.message, res)
    return res


def gone_or_poisoned(api: Api, namespace: str, sandbox_name: str, res: Result | None) -> DocksideError | None:
    """SandboxGone when the Sandbox no longer exists, SandboxPoisoned when its topology is poisoned; else None."""
    sandbox = api.get(namespace, "sandboxes", sandbox_name)
    if sandbox is None:
        return SandboxGone("SandboxNotFound", f"Sandbox {namespace}/{sandbox_name} does not exist", res)
    if is_true(sandbox, "TopologyPoisoned"):
        poisoned = condition(sandbox, "TopologyPoisoned")
        return SandboxPoisoned(poisoned.get("reason", ""), poisoned.get("message", ""), res)
    return None

