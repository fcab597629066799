"""Sandbox.run's default path: one command through the data plane's exec subresource (commands.py), its outcome
in the shape of an Execution's (execution.Result), its errors those an Execution's outcome raises, and no
object made in the API. What differs from an Execution (record=True) is in clients/python/README.md,
"Sandbox.run: the data plane, or an Execution"."""

from __future__ import annotations

from typing import Mapping, Sequence

from .api import Api
from .commandio import Input
from .commands import CommandHandle, Commands, finish
from .errors import ApiError, CommandTimeout, DeadlineExceeded, DocksideError, SandboxNotReady
from .execution import Result, gone_or_poisoned

# The bytes of each of stdout and stderr a Result keeps unless run is told otherwise: an Execution's default
# spec.maxOutputBytes, so that a run gives the same Result whichever path it takes.
MAX_OUTPUT_BYTES = 65536


def start(api: Api, namespace: str, sandbox_name: str, command: Sequence[object], stdin: Input | None = None,
          env: Mapping[str, object] | None = None, working_dir: str | None = None,
          max_output_bytes: int | None = None) -> CommandHandle:
    """The CommandHandle of command (an argv list, no shell) started in the Sandbox, stdin written and then
    closed; env and working_dir go through the image's env and sh, as for commands.run. A refusal raises what
    an Execution's outcome would: SandboxGone, SandboxPoisoned, SandboxNotReady; any other, its ApiError."""
    if isinstance(command, str):
        raise TypeError("command is an argv list, run without a shell: use ['sh', '-c', '...'] for shell syntax")
    limit = MAX_OUTPUT_BYTES if max_output_bytes is None else int(max_output_bytes)
    if limit < 1:
        raise ValueError(f"max_output_bytes must be at least 1, not {max_output_bytes}")
    try:
        return Commands(api, namespace, sandbox_name).start(command, stdin, env=env, cwd=working_dir, limit=limit)
    except ApiError as exc:
        if exc.status in (401, 403):  # the caller's, not the Sandbox's
            raise
        raise why_not(api, namespace, sandbox_name, exc, None) from None


def collect(api: Api, namespace: str, sandbox_name: str, handle: CommandHandle, timeout: float) -> Result:
    """The Result of the command on handle. Past timeout seconds its stream is closed, which ends it (the agent
    ends the command and what it started) and raises DeadlineExceeded with the output so far: the Sandbox runs
    on. A command the Sandbox could not run raises as start does; a KeyboardInterrupt closes the stream too."""
    try:
        finish(handle, timeout)
    except CommandTimeout:
        raise DeadlineExceeded("DeadlineExceeded", f"the command ran past its {timeout:g}s timeout: its exec stream "
                               "was closed, which ended it and what it started; the Sandbox runs on",
                               result_of(handle, "DeadlineExceeded")) from None
    except DocksideError as exc:  # the command could not run, or its stream broke off
        raise why_not(api, namespace, sandbox_name, exc, result_of(handle, exc.reason, exc.message)) from None
    return result_of(handle)


def why_not(api: Api, namespace: str, sandbox_name: str, exc: DocksideError, res: Result | None) -> DocksideError:
    """The error that says why the Sandbox did not run the command, as execution.outcome says it: gone,
    poisoned, or refused for its state (not Running, Paused, being deleted); else exc itself."""
    found = gone_or_poisoned(api, namespace, sandbox_name, res)
    if found is not None:
        return found
    if isinstance(exc, ApiError) and exc.status == 409:
        return SandboxNotReady("SandboxNotReady", exc.message, res)
    if exc.result is None:
        exc.result = res
    return exc


def result_of(handle: CommandHandle, reason: str | None = None, message: str = "") -> Result:
    """The handle's output as an execution.Result: reason and message those an Execution would have for how
    the command ended, unless given (the command did not end on its own)."""
    out = handle.result()
    stdout_cut, stderr_cut = handle.cut()
    if reason is None:
        reason = "Completed" if out.exit_code == 0 else "Error"
        message = f"the command exited with code {out.exit_code}"
        if stdout_cut or stderr_cut:
            reason = "OutputLimitExceeded"
            message += f"; output past the cap was cut ({stdout_cut} bytes of stdout, {stderr_cut} of stderr)"
    return Result(name="", reason=reason, message=message, exit_code=out.exit_code, stdout=out.stdout,
                  stderr=out.stderr, stdout_truncated_bytes=stdout_cut, stderr_truncated_bytes=stderr_cut,
                  sandbox_killed=False)
