#!/usr/bin/env bash
# Prints Debian's mypy, which make lint type-checks the Python client (clients/python) with, installing the
# mypy package with apt-get when it is missing. Debian's /usr/bin/mypy runs on Debian's python3, which has the
# packages the client imports (hack/ensure-python.sh); nothing comes from a Python package index.
set -euo pipefail

mypy=/usr/bin/mypy

if [[ ! -x "$mypy" ]]; then
  if ! command -v apt-get >/dev/null; then
    echo "ensure-mypy: there is no $mypy and no apt-get to install Debian's mypy" >&2
    exit 1
  fi
  sudo=""
  [[ $(id -u) == 0 ]] || sudo="sudo"
  echo ">> installing mypy with apt-get (once)" >&2
  if ! $sudo apt-get install -y -q mypy >&2; then
    $sudo apt-get update -q >&2
    $sudo apt-get install -y -q mypy >&2
  fi
  [[ -x "$mypy" ]] || { echo "ensure-mypy: $mypy is still missing after apt-get install mypy" >&2; exit 1; }
fi
echo "$mypy"
