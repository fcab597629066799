package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The workspace is a Docker volume: a tmpfs that the daemon's host mounts at the volume's Mountpoint while a
// container uses it. When the agent sees that mount and may act as any user in it (HostAccess), files reads
// and writes the workspace's files there, on the host's side: no archive call, so no container lock held
// for the length of a transfer, nothing spooled, the body streamed at the client's pace. Paths are resolved
// in the container first (resolve.go), exactly as for the archive API; the host's side then opens the
// resolved path with openat2 in the volume's root, refusing every symlink and every mount crossing, so a link
// that the container makes after the walk fails the call instead of leading anywhere
// (docs/design/dataplane-files.md).

// resolveFlags: ".." stays in the volume's root, no symlink of any kind is followed, no mount is crossed.
const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV

// hostCaps are what serving a volume from the host's side needs: CAP_DAC_OVERRIDE to read and write the
// user's files and directories, CAP_CHOWN to give what it writes to the container's user, CAP_FOWNER to
// rename over the user's files in the volume's sticky root.
var hostCaps = []uint{unix.CAP_DAC_OVERRIDE, unix.CAP_CHOWN, unix.CAP_FOWNER}

// HostAccess tells whether this process can serve workspace volumes from the host's side: the kernel has
// openat2 and the process holds hostCaps. The agent sets Handler.HostVolumes from it.
func HostAccess() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	for _, c := range hostCaps {
		if data[c/32].Effective&(1<<(c%32)) == 0 {
			return false
		}
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveFlags})
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}

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
	root, err := os.OpenFile(info.Mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil
	}
	if !isVolumeMount(root, info.Mountpoint, info.SizeBytes) {
		root.Close()
		return nil, nil
	}
	return m, root
}

// isVolumeMount checks that root is the volume's tmpfs as the container sees it, not the empty directory
// under it (an agent in a pod whose host path does not propagate mounts sees that, and what it wrote there
// the container would never see): a mount point, of type tmpfs, of the volume's size.
func isVolumeMount(root *os.File, at string, size int64) bool {
	var fs unix.Statfs_t
	var st, parent unix.Stat_t
	if unix.Fstatfs(int(root.Fd()), &fs) != nil || unix.Fstat(int(root.Fd()), &st) != nil ||
		unix.Stat(filepath.Dir(at), &parent) != nil {
		return false
	}
	page := fs.Bsize
	return fs.Type == unix.TMPFS_MAGIC && st.Dev != parent.Dev && page > 0 &&
		int64(fs.Blocks)*page == (size+page-1)/page*page
}

// openIn opens p, a path resolved in the container and lying in m, under the volume's root.
func openIn(root *os.File, m *Mount, p string, flags int, mode uint32) (*os.File, error) {
	rel := strings.TrimPrefix(strings.TrimPrefix(p, m.Path), "/")
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Mode: uint64(mode), Resolve: resolveFlags}
	fd, err := unix.Openat2(int(root.Fd()), rel, &how)
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
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
