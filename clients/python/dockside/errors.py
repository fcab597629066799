"""The errors the client raises, each in Dockside's words: the reason of the condition or status that says
what failed, one word (InvalidSpec, DeadlineExceeded, ServiceReadinessFailed, ...), and its message for
people. No API client stack escapes: errors of the Kubernetes client are turned into ApiError."""

from __future__ import annotations

from typing import Any


class DocksideError(Exception):
    """Something Dockside or the API server refused or reported; reason is one word, message a sentence."""

    def __init__(self, reason: str, message: str, result: Any = None) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        # result is the outcome of what failed when it has one, its output up to the failure: an execution.Result,
        # a CommandResult or a CodeResult.
        self.result = result


class ApiError(DocksideError):
    """The API server refused a request (Forbidden, Invalid, AlreadyExists, ...), with its own message."""

    def __init__(self, reason: str, message: str, status: int = 0) -> None:
        super().__init__(reason, message)
        self.status = status


class WaitTimeout(DocksideError, TimeoutError):
    """The client stopped waiting: the object had not reached the state asked for. It is left as it was,
    except an Execution, which is deleted (which stops its command)."""


class SandboxFailed(DocksideError):
    """The Sandbox cannot become Ready without a change (it is Stalled): the reason names the phase that
    failed, e.g. ImagePullTimeout, ServiceReadinessFailed, CheckpointNotFound."""


class SandboxGone(DocksideError):
    """The Sandbox does not exist (any more)."""


class SandboxNotReady(DocksideError):
    """The Sandbox could not run the command (not Ready, a run, being deleted), and it is not poisoned."""


class SandboxPoisoned(DocksideError):
    """The Sandbox's topology is poisoned (TopologyPoisoned): a command's deadline, a cancel, processes left
    running or a stopped service killed it. Its workspace is kept; it runs nothing more until its spec rolls
    the topology or it is recreated. result holds the Execution that killed it, when this run did."""


class DeadlineExceeded(DocksideError):
    """The command of Sandbox.run ran past its timeout and was ended; result holds the output printed before.
    Through the data plane (run's default) the client closed the command's exec stream, and the agent ended the
    command and what it started: the Sandbox runs on. Through an Execution (record=True) it is the
    ExecutionDeadlineExceeded below."""


class ExecutionDeadlineExceeded(DeadlineExceeded, SandboxPoisoned):
    """An Execution's command ran past its timeout (Sandbox.run with record=True): the agent killed the
    Sandbox's container from the host, which poisons the Sandbox. result holds the output printed before the
    kill."""


class CheckpointFailed(DocksideError):
    """The Checkpoint could not be taken (it is Stalled), e.g. SandboxNotFound or a byte cap exceeded."""


class CommandTimeout(DocksideError, TimeoutError):
    """A streamed command (sbx.commands.run) ran past its timeout: the client closed its stream, and the agent
    ends the command once it notices (clients/python/README.md). result holds the output printed before."""


class CodeTimeout(DocksideError, TimeoutError):
    """Code run by run_code ran past its timeout: it was interrupted, and result holds its CodeResult (the
    session kept its state), or it did not stop and the session was killed (result is None)."""
