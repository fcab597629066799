#!/usr/bin/env bash
# Prints Debian's mypy, which make lint type-checks the Python client (clients/python) with, installing the
# mypy package with apt-get when it is missing. Debian's /usr/bin/mypy runs on Debian's python3, which has the
# packages the client imports (hack/ensure-python.sh); nothing comes from a Python package index.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"

mypy=/usr/bin/mypy

if [[ ! -x "$mypy" ]]; then
  apt_install_once ensure-mypy mypy "there is no $mypy"
  [[ -x "$mypy" ]] || { echo "ensure-mypy: $mypy is still missing after apt-get install mypy" >&2; exit 1; }
fi
echo "$mypy"
