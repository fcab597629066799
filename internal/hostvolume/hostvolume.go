// Package hostvolume opens a Docker volume's files on the daemon's host, at the volume's Mountpoint, where
// the agent runs: the workspace for the files subresource (docs/design/dataplane-files.md, "The workspace's
// host side") and a session's run volume for an Execution's output
// (docs/design/decisions/0028-commands-run-under-a-supervisor.md). What is in such a volume is a
// container's to change, so nothing in it is followed: no symlink of any kind, no mount crossed, ".." kept in
// the volume's root.
package hostvolume

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Resolve is how a path in a volume is resolved: ".." stays in the volume's root, no symlink of any kind is
// followed, no mount is crossed.
const Resolve = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV

// caps are what reading and writing a volume's files as any of its users takes: CAP_DAC_OVERRIDE to read and
// write the users' files and directories, CAP_CHOWN to give what it writes to the container's user,
// CAP_FOWNER to rename over the users' files in a sticky root.
var caps = []uint{unix.CAP_DAC_OVERRIDE, unix.CAP_CHOWN, unix.CAP_FOWNER}

// Access tells whether this process can use volumes on their host side: the kernel has openat2 and the
// process holds caps. Whether it sees a given volume's mount is Root's to say.
func Access() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	for _, c := range caps {
		if data[c/32].Effective&(1<<(c%32)) == 0 {
			return false
		}
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: Resolve})
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}

// Root opens the volume's root at mountpoint when it is the volume's tmpfs as a container sees it, not the
// empty directory under it (an agent in a pod whose host path does not propagate mounts sees that, and what
// it wrote there the container would never see): a mount point, of type tmpfs, of size bytes. It returns
// nil otherwise. The caller closes the root.
func Root(mountpoint string, size int64) *os.File {
	root, err := os.OpenFile(mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	var fs unix.Statfs_t
	var st, parent unix.Stat_t
	if unix.Fstatfs(int(root.Fd()), &fs) != nil || unix.Fstat(int(root.Fd()), &st) != nil ||
		unix.Stat(filepath.Dir(mountpoint), &parent) != nil {
		root.Close()
		return nil
	}
	page := fs.Bsize
	if fs.Type != unix.TMPFS_MAGIC || st.Dev == parent.Dev || page <= 0 || int64(fs.Blocks)*page != (size+page-1)/page*page {
		root.Close()
		return nil
	}
	return root
}

// OpenIn opens rel, a path relative to the volume's root, with Resolve: no link followed, no mount crossed.
// name is how errors name it.
func OpenIn(root *os.File, rel, name string, flags int, mode uint32) (*os.File, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Mode: uint64(mode), Resolve: Resolve}
	fd, err := unix.Openat2(int(root.Fd()), rel, &how)
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}
