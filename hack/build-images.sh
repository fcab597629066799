#!/usr/bin/env bash
# Builds the images that samples and tests use, locally and FROM scratch, since no registry is reachable.
# An image that is already in the image store is not built again. Usage: build-images.sh [name ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=dockside.dev

need_package() { # need_package <command-or-file> <debian-package>
  [[ -e "$1" ]] || command -v "$1" >/dev/null 2>&1 && return
  echo ">> installing $2 from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "$2" >&2 || { apt-get update -qq >&2 && apt-get install -y -qq "$2" >&2; }
}

present() { docker image inspect "$1" >/dev/null 2>&1; }

build_busybox() {
  local tag="$prefix/busybox:local" ctx
  present "$tag" && { echo ">> $tag is present"; return; }
  need_package /bin/busybox busybox-static
  ctx=$(mktemp -d); trap 'rm -rf "$ctx"' RETURN
  cp "$root/hack/images/busybox/Dockerfile" "$ctx/"
  mkdir -p "$ctx/rootfs/bin" "$ctx/rootfs/tmp" "$ctx/rootfs/workspace" "$ctx/rootfs/etc"
  chmod 1777 "$ctx/rootfs/tmp"
  cp /bin/busybox "$ctx/rootfs/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [[ "$applet" == busybox ]] || ln -sf busybox "$ctx/rootfs/bin/$applet"
  done
  ln -s bin "$ctx/rootfs/sbin"; mkdir -p "$ctx/rootfs/usr"; ln -s ../bin "$ctx/rootfs/usr/bin"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$ctx/rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$ctx/rootfs/etc/group"
  echo ">> building $tag" >&2
  docker build -q -t "$tag" "$ctx" >"$ctx/build.log" 2>&1 || { cat "$ctx/build.log" >&2; exit 1; }
  present "$tag" || { echo "!! $tag is not in the image store after the build" >&2; exit 1; }
  echo ">> built $tag"
}

build_holder() {
  local tag="$prefix/holder:local" ctx
  present "$tag" && { echo ">> $tag is present"; return; }
  ctx=$(mktemp -d); trap 'rm -rf "$ctx"' RETURN
  cp "$root/hack/images/holder/Dockerfile" "$ctx/"
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$ctx/dockside-holder" ./cmd/dockside-holder)
  echo ">> building $tag" >&2
  docker build -q -t "$tag" "$ctx" >"$ctx/build.log" 2>&1 || { cat "$ctx/build.log" >&2; exit 1; }
  present "$tag" || { echo "!! $tag is not in the image store after the build" >&2; exit 1; }
  echo ">> built $tag"
}

images=("$@")
[[ ${#images[@]} -gt 0 ]] || images=(busybox holder)
for image in "${images[@]}"; do
  "build_$image"
done
