"""Finds the cluster and the namespace the way kubectl does: an explicit kubeconfig, else the files $KUBECONFIG
names, else ~/.kube/config, else the in-cluster service account; the namespace given, else the kubeconfig
context's, else the service account's, else "default"."""

from __future__ import annotations

import os

from kubernetes import client, config

from .api import Api
from .errors import ApiError

SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def connect(kubeconfig: str | None = None, context: str | None = None,
            namespace: str | None = None) -> tuple[Api, str]:
    """(Api, namespace) for the cluster kubectl would talk to with the same --kubeconfig, --context and
    --namespace."""
    # Read now, not when the kubernetes package was imported (its default), so that KUBECONFIG set later counts.
    files = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    try:
        if kubeconfig or os.environ.get("KUBECONFIG") or os.path.exists(files):
            api_client = config.new_client_from_config(config_file=files, context=context, persist_config=False)
            return Api(api_client), namespace or context_namespace(files, context)
        cfg = client.Configuration()
        config.load_incluster_config(client_configuration=cfg)
        return Api(client.ApiClient(cfg)), namespace or service_account_namespace()
    except config.ConfigException as exc:
        raise ApiError("NoConfiguration", f"no cluster to talk to: {exc}") from None


def context_namespace(kubeconfig: str, context: str | None) -> str:
    """The namespace of the kubeconfig's context (the current one unless context names another)."""
    contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)
    chosen = next((c for c in contexts if c["name"] == context), None) if context else current
    return ((chosen or {}).get("context") or {}).get("namespace") or "default"


def service_account_namespace() -> str:
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"
