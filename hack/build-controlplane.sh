#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from source at the versions pinned in hack/tools/go.mod into
# bin/k8s/<version>/ (git-ignored). No download site is reachable here, and users should not need one either.
# A second run finds the binaries and does nothing; so does a run with KUBEBUILDER_ASSETS naming a folder that
# already holds all three (envtest binaries a user has). Prints the folder on stdout and nothing else there:
# the Makefile captures it as KUBEBUILDER_ASSETS. Progress, notices and errors go to stderr.
# --quiet leaves out the notice about KUBEBUILDER_ASSETS (the Makefile says it once, not at every use).
set -euo pipefail
quiet=false
[[ "${1:-}" == "--quiet" ]] && quiet=true
# How often a build that is still running says so; the tests of this script make it short.
progress_every=${BUILD_PROGRESS_EVERY:-30}
binaries=(kube-apiserver etcd kubectl)

# use_assets prints the user's folder if it holds every binary; it fails, saying what is missing, if not:
# setting KUBEBUILDER_ASSETS says "use these", so building others behind the user's back would be a surprise.
use_assets() {
  local dir missing=()
  dir=$(cd "$1" 2>/dev/null && pwd) || { echo "!! KUBEBUILDER_ASSETS=$1 is not a folder; unset it to build the control plane from source" >&2; exit 1; }
  for name in "${binaries[@]}"; do
    [[ -x "$dir/$name" ]] || missing+=("$name")
  done
  if ((${#missing[@]})); then
    echo "!! KUBEBUILDER_ASSETS=$dir lacks ${missing[*]} (executable); add them or unset it to build the control plane from source" >&2
    exit 1
  fi
  $quiet || echo ">> using envtest binaries from $dir (KUBEBUILDER_ASSETS): nothing to build" >&2
  echo "$dir"
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  use_assets "$KUBEBUILDER_ASSETS"
  exit 0
fi

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/hack/tools"
version=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$tools/go.mod")
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3" {print $2; exit}' "$tools/go.mod")
out="$root/bin/k8s/${version}-etcd${etcd_version}"
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" && -x "$out/kubectl" ]]; then
  echo "$out"
  exit 0
fi

# duration says 150 seconds as 2m30s.
duration() {
  if (($1 >= 60)); then echo "$(($1 / 60))m$(($1 % 60))s"; else echo "$1s"; fi
}

# The build and the ticker run as jobs of their own (set -m: each its own process group, and SIGINT not ignored
# as it is for plain background commands), with the script waiting on them: bash runs a trap only once a
# foreground child has ended, so waiting lets a signal reach the traps at once, and a trap can end a job's
# whole group (go build's compiler and linker, the ticker's sleep), leaving nothing behind.
set -m
jobs_running=()
end_jobs() {
  local pid
  for pid in "${jobs_running[@]}"; do
    kill -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  jobs_running=()
}
# A failed build (set -e), Ctrl-C or a kill all end the build and the ticker before the script ends.
trap end_jobs EXIT
trap 'end_jobs; exit 130' INT
trap 'end_jobs; exit 143' TERM

# build_one builds one binary while a ticker says every progress_every seconds that it still runs, so that a
# first run is not minutes of silence. Nothing goes to stdout: the caller captures it for the folder.
build_one() { # name version go-build-arguments...
  local name=$1 ver=$2 started=$SECONDS ticker build
  shift 2
  while sleep "$progress_every"; do
    echo ">> building $name $ver: $(duration $((SECONDS - started))) so far" >&2
  done >/dev/null &
  ticker=$!
  go build "$@" >&2 &
  build=$!
  jobs_running=("$ticker" "$build")
  wait "$build"
  end_jobs
  echo ">> built $name in $(duration $((SECONDS - started)))" >&2
}

mkdir -p "$out.tmp"
echo ">> building control plane ${version} (etcd ${etcd_version}) from source into $out" >&2
echo ">> a new machine does this once; it takes about 15 minutes on 2 cores (set KUBEBUILDER_ASSETS to a folder of envtest binaries to skip it)" >&2
cd "$tools"
export CGO_ENABLED=0
minor=$(echo "$version" | cut -d. -f2)
# Stamp the version the binaries are built from, so that `kubectl version` and discovery tell the truth.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
for target in k8s.io/kubernetes/cmd/kube-apiserver ./cmd/etcd ./cmd/kubectl; do
  name=$(basename "$target")
  ver=$version
  [[ "$name" == etcd ]] && ver=$etcd_version
  echo ">> building $name $ver ..." >&2
  build_one "$name" "$ver" -trimpath -ldflags="$ldflags" -o "$out.tmp/$name" "$target"
done
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
