package files

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"

	"github.com/dockside-dev/dockside/internal/hostvolume"
)

// The workspace is a Docker volume: a tmpfs that the daemon's host mounts at the volume's Mountpoint while a
// container uses it. When the agent sees that mount and may act as any user in it (hostvolume.Access), files reads
// and writes the workspace's files there, on the host's side: no archive call, so no container lock held
// for the length of a transfer, nothing spooled, the body streamed at the client's pace. Paths are resolved
// in the container first (resolve.go), exactly as for the archive API; the host's side then opens the
// resolved path with openat2 in the volume's root, refusing every symlink and every mount crossing, so a link
// that the container makes after the walk fails the call instead of leading anywhere
// (docs/design/dataplane-files.md).

// volumeOf is the mount holding p when it is a volume this handler serves from the host's side, and the
// volume's root opened there; nil when p is elsewhere, or the volume's mount is not visible here (the
// archive API serves p then). The caller closes the root.
func (h *Handler) volumeOf(ctx context.Context, t Target, p string) (*Mount, *os.File) {
	m := t.mountOf(p)
	if !h.HostVolumes || m == nil || m.Volume == "" {
		return nil, nil
	}
	info, err := h.Driver.ObserveVolume(ctx, m.Volume)
	if err != nil || !info.Exists || info.Mountpoint == "" {
		return nil, nil
	}
	root := hostvolume.Root(info.Mountpoint, info.SizeBytes)
	if root == nil {
		return nil, nil
	}
	return m, root
}

// openIn opens p, a path resolved in the container and lying in m, under the volume's root.
func openIn(root *os.File, m *Mount, p string, flags int, mode uint32) (*os.File, error) {
	rel := strings.TrimPrefix(strings.TrimPrefix(p, m.Path), "/")
	f, err := hostvolume.OpenIn(root, rel, p, flags, mode)
	return f, err //nolint:wrapcheck // a *os.PathError naming p, which hostError reads
}

// hostError turns a failed call on the volume's host side into a Status.
func hostError(err error, p string, m *Mount) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return notFound("%s does not exist", p)
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EXDEV):
		return conflict("%s changed while files served it: a link or a mount appeared in its path", p)
	case errors.Is(err, syscall.EISDIR):
		return conflict("%s is a directory", p)
	case errors.Is(err, syscall.ENOTDIR):
		return conflict("a part of %s is not a directory", p)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return insufficientStorage("%s is full: %s", m.Name, sizeOf(m.SizeBytes))
	}
	return internal("%v", err)
}
