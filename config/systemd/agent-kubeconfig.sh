#!/usr/bin/env bash
# Prints a kubeconfig for an agent that systemd runs on Docker host <host> outside the cluster (docs/deploy.md).
# Each such host gets an identity of its own, the ServiceAccount dockside-agent-<host> in dockside-system, bound
# to the agent's roles: config/rbac/agent_confinement.yaml reads the node from that name and confines the agent
# to the Sandboxes of node <host>, so <host> must be the agent's --node-name. Deleting the ServiceAccount revokes
# the host's token at once. The server address and CA come from the current kubectl context, which must be
# allowed to create ServiceAccounts, their tokens and RBAC bindings there.
# Usage: agent-kubeconfig.sh <host> [token lifetime, default 8760h] > kubeconfig
set -euo pipefail
host=${1:?usage: agent-kubeconfig.sh <host> [token lifetime, default 8760h]}
lifetime=${2:-8760h}
kubectl=${KUBECTL:-kubectl}
ns=dockside-system
account=dockside-agent-$host

# Applied, so that a second run reuses the ServiceAccount and its bindings (and only mints a new token).
{
  "$kubectl" -n "$ns" create serviceaccount "$account" --dry-run=client -o yaml
  echo ---
  "$kubectl" create clusterrolebinding "$account" --clusterrole=dockside-agent \
    --serviceaccount="$ns:$account" --dry-run=client -o yaml
  echo ---
  "$kubectl" -n "$ns" create rolebinding "$account" --role=dockside-agent-leader-election \
    --serviceaccount="$ns:$account" --dry-run=client -o yaml
} | "$kubectl" apply -f - >/dev/null
token=$("$kubectl" -n "$ns" create token "$account" --duration="$lifetime")
server=$("$kubectl" config view --minify --flatten -o jsonpath='{.clusters[0].cluster.server}')
ca=$("$kubectl" config view --minify --flatten -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')

cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $account
  user:
    token: $token
contexts:
- name: dockside-agent
  context:
    cluster: cluster
    user: $account
current-context: dockside-agent
KUBECONFIG
