#!/usr/bin/env bash
# Regenerates the Go code of E2B's envd services (internal/e2b/envdapi) from the protos beside it, with protoc
# (Debian's protobuf-compiler, installed with apt-get when missing) and the plugins at the versions go.mod pins.
# docs/e2b.md says where the protos come from.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v protoc >/dev/null; then
	apt-get install -y protobuf-compiler >/dev/null
fi
bin="$(pwd)/bin/protoc-plugins"
GOBIN="$bin" go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GOBIN="$bin" go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1
root=internal/e2b/envdapi
PATH="$bin:$PATH" protoc -I "$root/proto" \
	--go_out=. --go_opt=module=github.com/dockside-dev/dockside \
	--connect-go_out=. --connect-go_opt=module=github.com/dockside-dev/dockside \
	"$root/proto/process/process.proto" "$root/proto/filesystem/filesystem.proto"
