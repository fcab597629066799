#!/usr/bin/env bash
# The README's quickstart, word for word: the README shows these commands and the end-to-end tests run this
# script against a real agent, so the README cannot go stale. Needs KUBECONFIG pointing at a control plane
# with an agent (make run prints the line) and the images from `make images`.
set -euo pipefail
cd "$(dirname "$0")/.."

kubectl apply -f config/samples/
kubectl wait --for=condition=Ready sandbox --all --timeout=180s
kubectl get sbx
