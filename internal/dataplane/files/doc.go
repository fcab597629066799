// Package files serves the files subresource of a Sandbox (sandboxes/files in the aggregated API group
// subresources.dockside.dev): read, write, stat, list, remove, mkdir and tar streams in and out of the
// primary container, of any size, streamed end to end. The API server authenticates and authorizes the
// caller (Verb gives the RBAC verb) and routes the request to the agent of the Sandbox's node, which calls
// Handler.Serve with the Sandbox's Target (TargetFor).
//
// A file's read and write in the workspace go to its volume's host side when the agent can reach it
// (volume.go, Handler.HostVolumes). Everything else in the workspace, and the root, go through the Docker
// daemon's archive API (dockerdriver's CopyFrom, CopyToAsUser, StatPath), which works in any image, shell or
// not, and on a paused container; the driver's RenamePath and RemovePath run the image's own mv and rm as the
// container's user, so writes and removes there need an image with them (busybox, coreutils) and a running,
// unpaused container. The container's own tmpfs mounts (scratch, /tmp), which the archive API cannot see, go
// through its own sh, stat, readlink and tar, streamed (inside.go). The rules (paths, symlinks, secrets,
// atomic writes, errors) are in
// docs/design/dataplane-files.md.
package files
