#!/usr/bin/env bash
# Builds the images that samples and tests use, locally and FROM scratch, since no registry is reachable.
# An image that is already in the image store is not built again. Usage: build-images.sh [name ...]; no name
# builds all of them. busybox and holder take seconds; python, redis and base debootstrap Debian's packages
# (minutes, once: they share the Debian root).
# IMAGE_TAG (default local) tags them otherwise, e.g. to try a changed recipe beside the images tests use.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=dockside.dev
version=${IMAGE_TAG:-local}
# Every temporary folder lives in one scratch folder that goes away however the script ends (a Debian root file
# system is a few hundred MB).
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT

need_package() { # need_package <command-or-file> <debian-package>
  [[ -e "$1" ]] || command -v "$1" >/dev/null 2>&1 && return
  echo ">> installing $2 from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "$2" >&2 || { apt-get update -qq >&2 && apt-get install -y -qq "$2" >&2; }
}

present() { docker image inspect "$1" >/dev/null 2>&1; }

build_busybox() {
  local tag="$prefix/busybox:$version" ctx
  present "$tag" && { echo ">> $tag is present"; return; }
  need_package /bin/busybox busybox-static
  ctx=$(mktemp -d -p "$scratch"); trap 'rm -rf "$ctx"' RETURN
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
  local tag="$prefix/holder:$version" ctx supervisor
  supervisor=$(sed -n 's/^const Version = "\(.*\)"$/\1/p' "$root/internal/supervision/supervision.go")
  [[ -n "$supervisor" ]] || { echo "!! no supervisor version in internal/supervision/supervision.go" >&2; exit 1; }
  [[ $(docker image inspect -f '{{index .Config.Labels "dev.dockside.supervisor"}}' "$tag" 2>/dev/null) == "$supervisor" ]] &&
    { echo ">> $tag is present"; return; } # a holder with an older supervisor, or none, is built again
  ctx=$(mktemp -d -p "$scratch"); trap 'rm -rf "$ctx"' RETURN
  cp "$root/hack/images/holder/Dockerfile" "$ctx/"
  for cmd in dockside-holder dockside-supervise; do
    (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$ctx/$cmd" "./cmd/$cmd")
  done
  echo ">> building $tag" >&2
  docker build -q --label "dev.dockside.supervisor=$supervisor" -t "$tag" "$ctx" >"$ctx/build.log" 2>&1 || { cat "$ctx/build.log" >&2; exit 1; }
  present "$tag" || { echo "!! $tag is not in the image store after the build" >&2; exit 1; }
  echo ">> built $tag"
}

# The Debian-based images use the host's own release and the mirror apt already uses: the one download site
# that is reachable here, and one a Debian host without a registry reaches too.
debian_release() { (. /etc/os-release && echo "$VERSION_CODENAME"); }

# debian_uri <suite>: the first URI that apt's Debian sources give for <suite>, from deb822 .sources files or
# one-line .list files (an options block such as [signed-by=...] is skipped).
debian_uri() {
  local uri
  uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v suite="$1" '
    function stanza() {
      if ((" " types " ") ~ / deb / && (" " suites " ") ~ (" " suite " ") && uri != "") { found = 1; print uri; exit }
      types = suites = uri = ""
    }
    /^[ \t]*$/ { stanza(); next }
    $1 == "Types:" { types = $0; sub(/^Types:[ \t]*/, "", types) }
    $1 == "Suites:" { suites = $0; sub(/^Suites:[ \t]*/, "", suites) }
    $1 == "URIs:" { uri = $2 }
    END { if (!found) stanza() }')
  [[ -n "$uri" ]] || uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk -v suite="$1" '
    $1 == "deb" { i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i + 1) == suite) { print $i; exit } }')
  [[ -n "$uri" ]] || return 1
  echo "$uri"
}

# in_chroot <rootfs> <command...>: runs a command inside a Debian root file system with the host's DNS, a clean
# environment, and a policy-rc.d that keeps package scripts from starting services (redis-server) on the host.
in_chroot() {
  local rootfs=$1; shift
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"; chmod 755 "$rootfs/usr/sbin/policy-rc.d"
  local rc=0
  chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive "$@" || rc=$?
  rm -f "$rootfs/usr/sbin/policy-rc.d" "$rootfs/etc/resolv.conf"
  return $rc
}

# debian_base: the path of a minbase root file system of the host's release, with the release's updates and
# security fixes, as a tarball cached under the git-ignored bin/ and keyed by release and architecture. Built
# once with debootstrap and shared by every Debian-based image; delete it to pick up newer packages. Called as
# $(debian_base): progress goes to stderr, and a failure fails the caller's assignment (set -e).
debian_base() {
  local release arch tarball mirror security rootfs
  release=$(debian_release); arch=$(dpkg --print-architecture)
  tarball="$root/bin/debian/$release-$arch-minbase.tar"
  [[ -s "$tarball" ]] && { echo "$tarball"; return; }
  mirror=$(debian_uri "$release") || { echo "!! no Debian source for $release in /etc/apt/sources.list*" >&2; exit 1; }
  need_package debootstrap debootstrap
  rootfs=$(mktemp -d -p "$scratch")
  echo ">> debootstrap --variant=minbase $release from $mirror (once; a few minutes)" >&2
  debootstrap --variant=minbase "$release" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 ||
    { tail -n 30 "$rootfs.log" >&2; exit 1; }
  {
    echo "deb $mirror $release main"
    echo "deb $mirror $release-updates main"
    security=$(debian_uri "$release-security") && echo "deb $security $release-security main"
  } >"$rootfs/etc/apt/sources.list"
  # Documentation never lands in the images, also not from packages installed later on top of the base.
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' \
    'path-include /usr/share/locale/locale.alias' 'path-exclude /usr/share/lintian/*' \
    >"$rootfs/etc/dpkg/dpkg.cfg.d/excludes"
  echo ">> applying $release updates to the base" >&2
  in_chroot "$rootfs" sh -c 'apt-get update -qq && apt-get upgrade -y -qq && apt-get clean' >"$rootfs.log" 2>&1 ||
    { tail -n 30 "$rootfs.log" >&2; exit 1; }
  rm -rf "$rootfs"/var/lib/apt/lists/*
  mkdir -p "$(dirname "$tarball")"
  tar -C "$rootfs" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  rm -rf "$rootfs" "$rootfs.log"
  echo "$tarball"
}

# debian_unpack <rootfs>: a fresh copy of the shared base.
debian_unpack() {
  local tarball
  tarball=$(debian_base)
  mkdir -p "$1" && tar -C "$1" --numeric-owner -xf "$tarball"
}

# debian_install <rootfs> <package...>: installs packages without their recommends, then drops what a runtime
# image does not need: apt lists and caches, logs, docs, man pages, locales, device nodes (Docker makes /dev).
debian_install() {
  local rootfs=$1; shift
  echo ">> installing $* from Debian's packages into the image" >&2
  in_chroot "$rootfs" sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"' sh "$@" \
    >"$rootfs.log" 2>&1 || { tail -n 30 "$rootfs.log" >&2; exit 1; }
  rm -f "$rootfs.log"
  in_chroot "$rootfs" apt-get clean
  debian_trim "$rootfs"
}

# debian_trim <rootfs>: what a runtime image does not need, package lists to device nodes (debian_install).
debian_trim() {
  local rootfs=$1
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/log/* "$rootfs"/tmp/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/dev/* "$rootfs"/var/cache/ldconfig/aux-cache
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
}

# build_debian <name> <rootfs> [docker build flag...]: the image FROM scratch out of a finished root file system.
# The Dockerfile ADDs it as a tarball, since ADD keeps file owners (the non-root users' folders) where COPY would
# make them root's.
build_debian() {
  local name=$1 rootfs=$2 tag="$prefix/$1:$version" ctx
  shift 2
  ctx=$(dirname "$rootfs")
  cp "$root/hack/images/$name/Dockerfile" "$ctx/"
  tar -C "$rootfs" --numeric-owner -cf "$ctx/rootfs.tar" . && rm -rf "$rootfs"
  echo ">> building $tag" >&2
  docker build -q "$@" -t "$tag" "$ctx" >"$ctx/build.log" 2>&1 || { cat "$ctx/build.log" >&2; exit 1; }
  present "$tag" || { echo "!! $tag is not in the image store after the build" >&2; exit 1; }
  echo ">> built $tag"
}

# The stateful interpreter (docs/design/interpreter.md) that the python image carries, beside its Dockerfile.
interpreter="$root/hack/images/python/dockside_interpreter"

# python_recipe: a digest of what the python image is made of besides Debian's packages, kept in its label
# dockside.dev/recipe, so that an image built before the interpreter changed is built again.
python_recipe() { cat "$root/hack/images/python/Dockerfile" "$interpreter"/*.py | sha256sum | cut -c1-16; }

# Python 3 for sessions and runs: the user sandbox (1000:1000) owns /workspace and its home; the interpreter is
# in Debian's path for Python modules (python3 -m dockside_interpreter).
build_python() {
  local tag="$prefix/python:$version" ctx recipe
  recipe=$(python_recipe)
  [[ $(docker image inspect -f '{{index .Config.Labels "dockside.dev/recipe"}}' "$tag" 2>/dev/null) == "$recipe" ]] &&
    { echo ">> $tag is present"; return; }
  ctx=$(mktemp -d -p "$scratch"); trap 'rm -rf "$ctx"' RETURN
  debian_unpack "$ctx/rootfs"
  in_chroot "$ctx/rootfs" useradd --uid 1000 --user-group --create-home --shell /bin/bash sandbox
  debian_install "$ctx/rootfs" python3 ca-certificates
  install -d -o 1000 -g 1000 -m 755 "$ctx/rootfs/workspace"
  install -d -m 755 "$ctx/rootfs/usr/lib/python3/dist-packages/dockside_interpreter"
  install -m 644 "$interpreter"/*.py "$ctx/rootfs/usr/lib/python3/dist-packages/dockside_interpreter/"
  build_debian python "$ctx/rootfs" --label "dockside.dev/recipe=$recipe"
}

# The template image of E2B's SDKs (docs/e2b.md): the Debian root as it is, bash included (essential in
# Debian), with the user user (1000:1000, home /home/user) that E2B's sandboxes have, so that the SDK's
# `/bin/bash -l -c <cmd>` finds its shell and a login profile. Nothing is installed, so it needs no mirror once
# the base is cached.
build_base() {
  local tag="$prefix/base:$version" ctx
  present "$tag" && { echo ">> $tag is present"; return; }
  ctx=$(mktemp -d -p "$scratch"); trap 'rm -rf "$ctx"' RETURN
  debian_unpack "$ctx/rootfs"
  [[ -x "$ctx/rootfs/bin/bash" ]] || debian_install "$ctx/rootfs" bash
  in_chroot "$ctx/rootfs" useradd --uid 1000 --user-group --create-home --home-dir /home/user --shell /bin/bash user
  install -d -o 1000 -g 1000 -m 755 "$ctx/rootfs/workspace"
  debian_trim "$ctx/rootfs"
  build_debian base "$ctx/rootfs"
}

# Redis as a topology service: the user redis (999:999) is made first, so that its ids are fixed and the
# Dockerfile can name them; the package's scripts reuse it.
build_redis() {
  local tag="$prefix/redis:$version" ctx
  present "$tag" && { echo ">> $tag is present"; return; }
  ctx=$(mktemp -d -p "$scratch"); trap 'rm -rf "$ctx"' RETURN
  debian_unpack "$ctx/rootfs"
  in_chroot "$ctx/rootfs" sh -c 'groupadd --system --gid 999 redis &&
    useradd --system --uid 999 --gid 999 --home-dir /var/lib/redis --shell /usr/sbin/nologin redis'
  debian_install "$ctx/rootfs" redis-server
  build_debian redis "$ctx/rootfs"
}

images=("$@")
[[ ${#images[@]} -gt 0 ]] || images=(busybox holder python redis base)
for image in "${images[@]}"; do
  declare -F "build_$image" >/dev/null || { echo "!! unknown image $image (busybox, holder, python, redis, base)" >&2; exit 2; }
done
for image in "${images[@]}"; do
  "build_$image"
done
