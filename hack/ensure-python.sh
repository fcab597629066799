#!/usr/bin/env bash
# Prints the Python interpreter that has the Kubernetes client, which the Python client (clients/python) needs,
# installing Debian's python3-kubernetes with apt-get when it is missing. Debian's /usr/bin/python3 is used, not
# a python3 earlier on the PATH (pyenv and the like), since that is where apt-get installs the package; nothing
# comes from a Python package index.
set -euo pipefail

python=/usr/bin/python3
has_kubernetes() { "$python" -c 'import kubernetes' >/dev/null 2>&1; }

if ! has_kubernetes; then
  if ! command -v apt-get >/dev/null; then
    echo "ensure-python: $python cannot import kubernetes and there is no apt-get to install python3-kubernetes" >&2
    exit 1
  fi
  sudo=""
  [[ $(id -u) == 0 ]] || sudo="sudo"
  echo ">> installing python3-kubernetes with apt-get (once)" >&2
  if ! $sudo apt-get install -y -q python3-kubernetes >&2; then
    $sudo apt-get update -q >&2
    $sudo apt-get install -y -q python3-kubernetes >&2
  fi
  has_kubernetes || { echo "ensure-python: $python still cannot import kubernetes" >&2; exit 1; }
fi
echo "$python"
