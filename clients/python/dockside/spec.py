"""Turns the keyword arguments of Sandbox (close to those of single-host Docker sandbox providers: cpus,
memory_mb, pids_limit, workspace_mb, network) into a Sandbox object's spec. Arguments left out are left out of
the spec too, so that the API server's defaults apply (docs/api.md, "Defaults"; api/v1alpha1)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .api import API_VERSION, Object

NETWORK_MODES = {"none": "None", "isolated": "Isolated", "unrestricted": "Unrestricted"}


def cpu_quantity(cpus: float | str) -> str:
    """2 -> "2", 0.5 -> "500m"; a string such as "250m" is taken as it is."""
    if isinstance(cpus, str):
        return cpus
    millis = round(float(cpus) * 1000)
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def network_mode(network: str) -> str:
    mode = NETWORK_MODES.get(str(network).lower())
    if mode is None:
        raise ValueError(f"network must be one of {', '.join(NETWORK_MODES)}, not {network!r}: Dockside has no "
                         "host or shared-container networking")
    return mode


def env_list(env: Mapping[str, object] | None,
             secret_env: Mapping[str, tuple[str, str]] | None) -> list[dict[str, Any]]:
    """env {NAME: value} and secret_env {NAME: (secret, key)} as the spec's env list, in name order."""
    items: list[dict[str, Any]] = [{"name": name, "value": str(value)} for name, value in (env or {}).items()]
    for name, ref in (secret_env or {}).items():
        secret, key = ref
        items.append({"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    names = [item["name"] for item in items]
    if len(set(names)) != len(names):
        raise ValueError(f"a variable is both in env and in secret_env: {sorted(n for n in names if names.count(n) > 1)}")
    return sorted(items, key=lambda item: item["name"])


def sandbox_body(image: str, name: str | None = None, cpus: float | str | None = None, memory_mb: int | None = None,
                 pids_limit: int | None = None, workspace_mb: int | None = None, network: str | None = None,
                 allow: Iterable[str] | None = None, env: Mapping[str, object] | None = None,
                 secret_env: Mapping[str, tuple[str, str]] | None = None, services: Iterable[str] | None = None,
                 working_dir: str | None = None, restore_from: str | None = None,
                 labels: Mapping[str, str] | None = None, image_pull_policy: str | None = None) -> Object:
    """The Sandbox object to create: a session (no command), named name or generated from "sandbox-"."""
    resources: dict[str, Any] = {}
    if cpus is not None:
        resources["cpu"] = cpu_quantity(cpus)
    if memory_mb is not None:
        resources["memory"] = f"{int(memory_mb)}Mi"
    if pids_limit is not None:
        resources["pids"] = int(pids_limit)
    spec: dict[str, Any] = {"image": image}
    optional = {
        "resources": resources,
        "workspace": {"size": f"{int(workspace_mb)}Mi"} if workspace_mb is not None else None,
        "network": {k: v for k, v in (("mode", network_mode(network) if network is not None else None),
                                      ("allow", list(allow or []))) if v},
        "env": env_list(env, secret_env),
        "services": list(services or []),
        "workingDir": working_dir,
        "restoreFrom": restore_from,
        "imagePullPolicy": image_pull_policy,  # IfNotPresent, Always or Never: the API server checks it
    }
    spec.update({k: v for k, v in optional.items() if v})
    metadata: dict[str, Any] = {"name": name} if name else {"generateName": "sandbox-"}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": API_VERSION, "kind": "Sandbox", "metadata": metadata, "spec": spec}


def claim_body(pool: str, name: str | None = None, env: Mapping[str, object] | None = None,
               labels: Mapping[str, str] | None = None, active_deadline_seconds: int | None = None) -> Object:
    """The SandboxClaim to create: of the SandboxWarmPool pool, named name or generated from the pool's name;
    env ({NAME: value}) for every command run in the Sandbox, labels for the Sandbox (docs/pools.md)."""
    spec: dict[str, Any] = {"poolRef": {"name": pool}}
    if env:
        spec["env"] = [{"name": k, "value": str(v)} for k, v in env.items()]
    if labels:
        spec["labels"] = dict(labels)
    if active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = int(active_deadline_seconds)
    metadata = {"name": name} if name else {"generateName": f"{pool}-"}
    return {"apiVersion": API_VERSION, "kind": "SandboxClaim", "metadata": metadata, "spec": spec}
