# The agent image: one static binary FROM scratch. Build the binary first, then the image:
#
#   CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o bin/dockside-agent ./cmd/dockside-agent
#   docker build -t dockside.dev/agent:local .
#
# No base image is pulled, so this builds where no registry is reachable. Where one is, the binary can come from
# a golang container instead of a local Go (docs/deploy.md). .dockerignore sends only bin/dockside-agent.
FROM scratch
COPY bin/dockside-agent /dockside-agent
# Root by default, with every capability dropped by the DaemonSet: the Docker socket is root:docker 0660 and the
# docker group's id differs between hosts (docs/deploy.md).
ENTRYPOINT ["/dockside-agent"]
