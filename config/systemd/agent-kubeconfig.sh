#!/usr/bin/env bash
# Prints a kubeconfig for an agent that systemd runs on Docker host <host> outside the cluster (docs/deploy.md).
# It authenticates as the dockside-agent ServiceAccount with a token bound to the Secret dockside-agent-<host>
# in dockside-system: deleting that Secret revokes this host's token alone. The server address and CA come from
# the current kubectl context, which must be allowed to create Secrets and tokens there.
# Usage: agent-kubeconfig.sh <host> [token lifetime, default 8760h] > kubeconfig
set -euo pipefail
host=${1:?usage: agent-kubeconfig.sh <host> [token lifetime, default 8760h]}
lifetime=${2:-8760h}
kubectl=${KUBECTL:-kubectl}
ns=dockside-system
secret=dockside-agent-$host

# The Secret holds nothing: it only anchors the token's lifetime. Applied, so that a second run reuses it.
"$kubectl" -n "$ns" create secret generic "$secret" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
token=$("$kubectl" -n "$ns" create token dockside-agent --bound-object-kind=Secret \
  --bound-object-name="$secret" --duration="$lifetime")
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
- name: dockside-agent-$host
  user:
    token: $token
contexts:
- name: dockside-agent
  context:
    cluster: cluster
    user: dockside-agent-$host
current-context: dockside-agent
KUBECONFIG
