#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from source at the versions pinned in hack/tools/go.mod into
# bin/k8s/<version>/ (git-ignored). No download site is reachable here, and users should not need one either.
# A second run finds the binaries and does nothing. Prints the folder on stdout; progress goes to stderr.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/hack/tools"
version=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$tools/go.mod")
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3" {print $2; exit}' "$tools/go.mod")
out="$root/bin/k8s/${version}-etcd${etcd_version}"
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" && -x "$out/kubectl" ]]; then
  echo "$out"
  exit 0
fi
mkdir -p "$out.tmp"
echo ">> building control plane ${version} (etcd ${etcd_version}) from source into $out" >&2
echo ">> a new machine does this once; it takes a few minutes on 2 cores" >&2
cd "$tools"
export CGO_ENABLED=0
minor=$(echo "$version" | cut -d. -f2)
# Stamp the version the binaries are built from, so that `kubectl version` and discovery tell the truth.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
for target in k8s.io/kubernetes/cmd/kube-apiserver ./cmd/etcd ./cmd/kubectl; do
  name=$(basename "$target")
  echo ">> building $name ..." >&2
  start=$SECONDS
  go build -trimpath -ldflags="$ldflags" -o "$out.tmp/$name" "$target"
  echo ">> built $name in $((SECONDS - start))s" >&2
done
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
