"""Sandbox: a Dockside session Sandbox driven from Python. Its lifecycle methods are each one change to the
Sandbox object (or a Checkpoint) followed by a wait for the agent to report it done, as kubectl wait would;
commands, files and code go through the data plane (run too, unless it is to make an Execution)."""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, Iterable, Mapping, Sequence

from . import execution, fastpath
from .api import Api, Object
from .checkpoint import Checkpoint
from .checkpoint import take as take_checkpoint
from .code import CodeResult, Interpreter
from .commandio import Input, OnText
from .commands import Command, Commands, argv_of
from .config import connect
from .errors import SandboxFailed, SandboxGone, SandboxPoisoned
from .files import Files
from .pty import Pty
from .spec import claim_body, sandbox_body
from .waiting import Check, condition, is_true, wait_for

PLURAL = "sandboxes"
CLAIMS = "sandboxclaims"


class Sandbox:
    """A session Sandbox: one locked-down container of image, its own instances of the SandboxServices named
    in services, a memory-backed workspace at /workspace. Nothing is created until start() or the with
    block; the with block deletes it (and waits until Docker holds nothing of it) on the way out.

    The cluster and namespace are found as kubectl finds them (config.py); kubeconfig, context and namespace
    say otherwise. The other keyword arguments are the spec's: cpus (cores, e.g. 2 or 0.5), memory_mb,
    pids_limit, workspace_mb, network ("none", "isolated" or "unrestricted"), allow (an Isolated Sandbox's
    egress allowlist, e.g. ["pypi.org:443"]), env ({NAME: value}), secret_env ({NAME: (secret, key)}),
    services (SandboxService names, in start order), working_dir, labels, image_pull_policy ("IfNotPresent",
    "Always", "Never"). Left out, the API server's
    defaults apply (1 CPU, 512Mi, 256 pids, a 512Mi workspace, network none)."""

    def __init__(self, image: str | None = None, *, name: str | None = None, namespace: str | None = None,
                 kubeconfig: str | None = None, context: str | None = None, ready_timeout: float = 180,
                 api: Api | None = None, **spec: Any) -> None:
        if api is None:
            api, namespace = connect(kubeconfig, context, namespace)
        self._api, self.namespace = api, namespace or "default"
        self._body = sandbox_body(image, name=name, **spec) if image else None
        # The name is "" until known: the API server generates one when the spec gave none.
        self.name: str = name or ""
        self.uid: str | None = None
        self.ready_timeout = ready_timeout
        self.last_checkpoint: Checkpoint | None = None
        self._interpreter: Interpreter | None = None
        # The SandboxClaim that holds the Sandbox, when claim() got it: (name, uid); and how it started.
        self._claim: tuple[str, str] | None = None
        self.start_kind: str | None = None

    @classmethod
    def attach(cls, name: str, **kwargs: Any) -> Sandbox:
        """The existing Sandbox name (Ready or not: call wait_ready()), for running in and deleting."""
        sbx = cls(name=name, **kwargs)
        obj = sbx._api.get(sbx.namespace, PLURAL, name)
        if obj is None:
            raise SandboxGone("SandboxNotFound", f"Sandbox {sbx.namespace}/{name} does not exist")
        sbx.uid = obj["metadata"]["uid"]
        return sbx

    @classmethod
    def claim(cls, pool: str, *, name: str | None = None, env: Mapping[str, object] | None = None,
              labels: Mapping[str, str] | None = None, active_deadline_seconds: int | None = None,
              **kwargs: Any) -> Sandbox:
        """A Sandbox of the SandboxWarmPool pool, through a SandboxClaim named name (docs/pools.md): a warm one
        at once, or one started for the claim when the pool has none ready (start_kind says "Warm" or "Cold").
        env ({NAME: value}) reaches every command run in it (run, commands, run_code), not its primary's own
        process; labels go on the Sandbox; active_deadline_seconds counts from the claim. The claim owns the
        Sandbox: delete() and the with block delete the claim, and the Sandbox with it. A claim that cannot
        be met raises SandboxFailed with its reason, and is deleted. kwargs as the constructor's (namespace,
        kubeconfig, context, ready_timeout, api)."""
        sbx = cls(**kwargs)
        created = sbx._api.create(sbx.namespace, CLAIMS, claim_body(pool, name, env, labels, active_deadline_seconds))
        claim_name, claim_uid = created["metadata"]["name"], created["metadata"]["uid"]
        sbx._claim = (claim_name, claim_uid)
        try:
            obj = wait_for(sbx._api, sbx.namespace, CLAIMS, claim_name, claim_uid, claimed, sbx.ready_timeout,
                           f"SandboxClaim {sbx.namespace}/{claim_name} becoming Ready")
            sbx.name, sbx.start_kind = obj["status"]["sandboxName"], obj["status"].get("start")
            held = sbx._api.get(sbx.namespace, PLURAL, sbx.name)
            if held is None:
                raise SandboxGone("SandboxNotFound", f"Sandbox {sbx.namespace}/{sbx.name} of the claim does not exist")
            sbx.uid = held["metadata"]["uid"]
        except BaseException:
            sbx.delete()
            raise
        return sbx

    def __repr__(self) -> str:
        return f"Sandbox({self.namespace}/{self.name})"

    def __enter__(self) -> Sandbox:
        if self.uid is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.delete()

    def start(self) -> Sandbox:
        """Creates the Sandbox and waits until it is Ready; returns self. A Sandbox that cannot start raises
        SandboxFailed with the reason of the phase that failed; it is deleted then, as it is on a timeout."""
        if self._body is None:
            raise ValueError("start needs an image: Sandbox(image, ...); attach() and claim() give started ones")
        created = self._api.create(self.namespace, PLURAL, self._body)
        self.name, self.uid = created["metadata"]["name"], created["metadata"]["uid"]
        try:
            self.wait_ready()
        except BaseException:
            self.delete()
            raise
        return self

    def wait_ready(self, timeout: float | None = None) -> Object:
        """Waits until the agent reports the Sandbox Ready at its current spec."""
        return self._wait(ready, timeout or self.ready_timeout, "becoming Ready")

    def run(self, command: Sequence[object], stdin: Input | None = None, timeout: float = 60,
            env: Mapping[str, object] | None = None, working_dir: str | None = None,
            max_output_bytes: int | None = None, keep: bool = False, record: bool = False) -> execution.Result:
        """Runs command (an argv list, no shell) with stdin written to it, then closed, and returns an
        execution.Result (exit_code, stdout, stderr, *_truncated_bytes, reason, message, ok); a non-zero exit
        is a Result. max_output_bytes of each stream are kept (64 KiB unless told), the rest counted.

        By default it goes through the data plane's exec, as commands.run does, and makes no object in the API:
        stdin of any size (str, bytes or a binary file); past timeout the command's stream is closed, which
        ends it and what it started, and DeadlineExceeded is raised; the Sandbox runs on.

        record=True runs it through an Execution instead, an object the API server keeps a record of (its audit
        log, GitOps): stdin is text of at most 64 KiB; past timeout the agent kills the Sandbox's container
        and ExecutionDeadlineExceeded (a DeadlineExceeded and a SandboxPoisoned) is raised. keep=True keeps the
        Execution once read, and so records too.

        SandboxPoisoned, SandboxGone and SandboxNotReady say why a Sandbox could not run it
        (clients/python/README.md, "Sandbox.run: the data plane, or an Execution")."""
        if record or keep:
            return execution.run(self._api, self.namespace, self.name, command, stdin=execution.text_stdin(stdin),
                                 timeout=timeout, env=env, working_dir=working_dir,
                                 max_output_bytes=max_output_bytes, keep=keep)
        handle = fastpath.start(self._api, self.namespace, self.name, command, stdin, env, working_dir,
                                max_output_bytes)
        return fastpath.collect(self._api, self.namespace, self.name, handle, timeout)

    @property
    def commands(self) -> Commands:
        """Commands streamed through the exec subresource: commands.run(cmd, stdin=, timeout=, on_stdout=,
        on_stderr=, background=) (commands.py)."""
        return Commands(self._api, self.namespace, self.name)

    @property
    def files(self) -> Files:
        """The Sandbox's files through the files subresource: read, write, list, stat, exists, remove,
        make_dir, upload, download (files.py)."""
        return Files(self._api, self.namespace, self.name)

    def pty(self, command: Command = "sh", cols: int = 80, rows: int = 24,
            on_data: Callable[[bytes], object] | None = None, env: Mapping[str, object] | None = None,
            cwd: str | None = None) -> Pty:
        """A terminal running command (a shell command line or an argv list; a shell by default) at cols x
        rows, TERM=xterm-256color; returns its pty.Pty (send_input, resize, wait, kill). on_data gets its output
        as bytes. RBAC as commands."""
        argv = argv_of(command, dict({"TERM": "xterm-256color"}, **(env or {})), cwd)
        return Pty(self._api.exec(self.namespace, self.name, argv, stdin=True, tty=True), on_data, cols, rows)

    def run_code(self, code: str, timeout: float | None = 60, on_stdout: OnText | None = None,
                 on_stderr: OnText | None = None, max_output_bytes: int | None = None) -> CodeResult:
        """Runs Python code in the Sandbox's interpreter session, started at the first call, whose variables and
        imports persist from one call to the next; returns a code.CodeResult (stdout, stderr, value, error).
        See code.Interpreter.run for timeouts and interrupts."""
        if self._interpreter is None:
            self._interpreter = self.interpreter()
        return self._interpreter.run(code, timeout=timeout, on_stdout=on_stdout, on_stderr=on_stderr,
                                     max_output_bytes=max_output_bytes)

    def interpreter(self) -> Interpreter:
        """A new interpreter session of its own (state apart from run_code's); close() it or use a with block."""
        image = (self._body or {}).get("spec", {}).get("image")
        where = f"Sandbox {self.namespace}/{self.name}" + (f" (image {image})" if image else "")
        return Interpreter(self.commands, where)

    def pause(self, timeout: float = 60) -> None:
        """Freezes every container of the Sandbox in place (processes, memory and files are kept)."""
        self._api.patch(self.namespace, PLURAL, self.name, {"spec": {"lifecycle": "Paused"}})
        self._wait(paused, timeout, "pausing")

    def resume(self, timeout: float = 60) -> None:
        """Thaws a paused Sandbox and waits until it is Ready again."""
        patched = self._api.patch(self.namespace, PLURAL, self.name, {"spec": {"lifecycle": "Running"}})
        if patched and condition(patched, "Paused").get("reason") == "Idle" and is_true(patched, "Paused"):
            # Frozen by its agent for idleness: the spec said Running already, and a call is what thaws it
            # (docs/design/idle-pause.md); a stat of / is the lightest.
            self.files.stat("/")
        self._wait(ready, timeout, "resuming")

    def checkpoint(self, name: str | None = None, paths: Iterable[str] | None = None,
                   timeout: float = 300) -> Checkpoint:
        """Captures the workspace (or paths in it) into a Checkpoint and returns it once stored: its digest
        and size_bytes. The Checkpoint outlives the Sandbox; delete it (or use it in a with block)."""
        self.last_checkpoint = take_checkpoint(self._api, self.namespace, self.name, name=name, paths=paths,
                                              timeout=timeout)
        return self.last_checkpoint

    def restore_into(self, new_name: str, checkpoint: Checkpoint | str | None = None,
                     ready_timeout: float | None = None) -> Sandbox:
        """A new Sandbox, new_name, with this one's spec and a workspace restored from checkpoint (a Checkpoint
        or its name; the last one this object took when None), started and Ready."""
        ckpt = checkpoint or self.last_checkpoint
        if ckpt is None:
            raise ValueError("restore_into needs a Checkpoint: take one with checkpoint() first")
        current = self._api.get(self.namespace, PLURAL, self.name)
        if current is None:
            raise SandboxGone("SandboxNotFound", f"Sandbox {self.namespace}/{self.name} does not exist")
        spec = copy.deepcopy(current["spec"])
        for fixed in ("nodeName", "restoreFrom", "lifecycle"):  # bound by the agent, or this one's alone
            spec.pop(fixed, None)
        spec["restoreFrom"] = ckpt if isinstance(ckpt, str) else ckpt.name
        restored = Sandbox(name=new_name, namespace=self.namespace, api=self._api,
                           ready_timeout=ready_timeout or self.ready_timeout)
        labels = current["metadata"].get("labels")
        restored._body = {"apiVersion": current["apiVersion"], "kind": "Sandbox",
                          "metadata": {"name": new_name, **({"labels": labels} if labels else {})}, "spec": spec}
        return restored.start()

    def delete(self, timeout: float = 120) -> None:
        """Deletes the Sandbox and waits until it is gone: the agent has removed its containers, network and
        workspace from Docker (its finalizer). Executions go with it; Checkpoints do not. A claimed Sandbox
        goes by deleting its claim, which would otherwise report it gone."""
        if self._claim is not None:
            self._api.delete(self.namespace, CLAIMS, *self._claim)
        if self.uid is None:
            return
        if self._interpreter is not None:
            self._interpreter.close()
        if self._claim is None:
            self._api.delete(self.namespace, PLURAL, self.name, self.uid)
        wait_for(self._api, self.namespace, PLURAL, self.name, self.uid, lambda s: s is None, timeout,
                 f"deleting Sandbox {self.namespace}/{self.name}")

    def status(self) -> Dict[str, Any]:
        """The Sandbox's status as the agent last wrote it (phase, conditions, nodeName, ...)."""
        obj = self._api.get(self.namespace, PLURAL, self.name)
        if obj is None:
            raise SandboxGone("SandboxNotFound", f"Sandbox {self.namespace}/{self.name} does not exist")
        return obj.get("status") or {}

    def _wait(self, check: Check, timeout: float, doing: str) -> Object:
        return wait_for(self._api, self.namespace, PLURAL, self.name, self.uid, check, timeout,
                        f"Sandbox {self.namespace}/{self.name} {doing}")


def current(sbx: Object | None) -> bool:
    """Whether the agent has acted on the Sandbox's latest spec; raises what keeps it from getting anywhere."""
    if sbx is None:
        raise SandboxGone("SandboxNotFound", "the Sandbox was deleted")
    if is_true(sbx, "TopologyPoisoned"):
        c = condition(sbx, "TopologyPoisoned")
        raise SandboxPoisoned(c.get("reason", ""), c.get("message", ""))
    if is_true(sbx, "Stalled"):
        c = condition(sbx, "Ready") or condition(sbx, "Stalled")
        raise SandboxFailed(c.get("reason", ""), c.get("message", ""))
    status = sbx.get("status") or {}
    return status.get("observedGeneration", 0) >= sbx["metadata"].get("generation", 1)


def ready(sbx: Object | None) -> bool:
    """current and Ready. A failed pull fails the wait at once, in the agent's words (the image and Docker's
    reason), though the agent would try again until the startup deadline: an image that is missing or
    misspelt is the usual cause, and waiting minutes to say so helps no one."""
    if condition(sbx, "Ready").get("reason") == "ImagePullFailed":
        c = condition(sbx, "Ready")
        raise SandboxFailed(c["reason"], c.get("message", ""))
    return current(sbx) and is_true(sbx, "Ready")


def claimed(claim: Object | None) -> bool:
    """Whether the claim holds a Ready Sandbox; raises what keeps it from getting one."""
    if claim is None:
        raise SandboxGone("ClaimNotFound", "the SandboxClaim was deleted")
    if is_true(claim, "Stalled"):
        c = condition(claim, "Stalled")
        raise SandboxFailed(c.get("reason", ""), c.get("message", ""))
    return is_true(claim, "Ready") and bool((claim.get("status") or {}).get("sandboxName"))


def paused(sbx: Object | None) -> bool:
    return current(sbx) and is_true(sbx, "Paused")
