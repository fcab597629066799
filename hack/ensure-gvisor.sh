#!/usr/bin/env bash
# Prints the agent flag that makes gVisor the default runtime of `make run GVISOR=1`'s agent, once this
# machine's Docker offers it: installs Debian's runsc with apt-get when it is missing, then checks that the
# daemon lists the runtime. It never touches the daemon's configuration (other work may share the daemon):
# when runsc is not registered it prints the daemon.json to add and stops (docs/deploy.md, "Running Sandboxes
# under gVisor").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"

name="${GVISOR_RUNTIME_NAME:-runsc}"

if ! command -v runsc >/dev/null; then
  apt_install_once ensure-gvisor runsc "there is no runsc"
  command -v runsc >/dev/null || { echo "ensure-gvisor: runsc is still missing after apt-get install runsc" >&2; exit 1; }
fi

if ! docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' | tr ' ' '\n' | grep -qx "$name"; then
  cat >&2 <<MSG
ensure-gvisor: this machine's Docker daemon has no runtime "$name". Add it to /etc/docker/daemon.json (the
ptrace platform works without KVM; see docs/deploy.md, "Running Sandboxes under gVisor") and restart Docker:
  "runtimes": {"$name": {"path": "$(command -v runsc)", "runtimeArgs": ["--platform=ptrace"]}}
MSG
  exit 1
fi
echo "--default-runtime=gVisor --gvisor-runtime-name=$name"
