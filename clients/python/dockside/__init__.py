"""Dockside sandboxes from Python: create a session Sandbox, run commands in it (through the data plane, or
recorded as Executions), stream them (sbx.commands), read and write its files (sbx.files), pause, resume,
checkpoint, restore and delete it, through the Kubernetes API server (RBAC: the dockside-edit role). See
clients/python/README.md."""

# The one place the version is written: pyproject.toml reads it from here.
__version__ = "0.1.0"

from .aio import AsyncSandbox
from .checkpoint import Checkpoint
from .code import CodeError, CodeResult, CodeValue, Interpreter
from .commands import CommandHandle, CommandResult
from .errors import (ApiError, CheckpointFailed, CodeTimeout, CommandTimeout, DeadlineExceeded, DocksideError,
                     ExecutionDeadlineExceeded, SandboxFailed, SandboxGone, SandboxNotReady, SandboxPoisoned,
                     WaitTimeout)
from .execution import Result
from .files import FileInfo
from .processes import ProcessHandle
from .provider import DocksideSandbox
from .sandbox import Sandbox

__all__ = ["Sandbox", "AsyncSandbox", "Checkpoint", "Result", "DocksideError", "ApiError", "WaitTimeout",
           "SandboxFailed", "SandboxGone", "SandboxNotReady", "SandboxPoisoned", "DeadlineExceeded",
           "ExecutionDeadlineExceeded", "CheckpointFailed", "CommandResult", "CommandHandle", "ProcessHandle",
           "CommandTimeout", "FileInfo", "CodeResult", "CodeValue", "CodeError", "CodeTimeout", "Interpreter",
           "DocksideSandbox"]
