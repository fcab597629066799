#!/usr/bin/env bash
# Prints the Python interpreter that has the Kubernetes client, which the Python client (clients/python) needs,
# installing Debian's python3-kubernetes with apt-get when it is missing. Debian's /usr/bin/python3 is used, not
# a python3 earlier on the PATH (pyenv and the like), since that is where apt-get installs the package; nothing
# comes from a Python package index.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"

python=/usr/bin/python3
has_kubernetes() { "$python" -c 'import kubernetes' >/dev/null 2>&1; }

if ! has_kubernetes; then
  apt_install_once ensure-python python3-kubernetes "$python cannot import kubernetes"
  has_kubernetes || { echo "ensure-python: $python still cannot import kubernetes" >&2; exit 1; }
fi
echo "$python"
