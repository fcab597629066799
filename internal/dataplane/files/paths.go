package files

import (
	"path"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// maxPath is Linux's PATH_MAX.
const maxPath = 4096

// kernelDirs hold the kernel's file systems, which the daemon's view of a container does not have: what the
// archive API would show there is an empty directory of the image, not the container's.
var kernelDirs = []string{"/proc", "/sys", "/dev"}

// cleanPath checks a path as given in a request and cleans it: absolute, no NUL, no ".." that climbs above
// the root (which path.Clean would quietly drop), and at most maxDepth directories deep.
func cleanPath(raw string) (string, error) {
	switch {
	case raw == "":
		return "", badRequest("a path is required: ?path=/workspace/...")
	case !strings.HasPrefix(raw, "/"):
		return "", badRequest("the path %q is not absolute: paths are absolute in the container, like /workspace/file", raw)
	case strings.ContainsRune(raw, 0):
		return "", badRequest("the path holds a NUL byte")
	case len(raw) > maxPath:
		return "", badRequest("the path is longer than %d bytes", maxPath)
	}
	depth := 0
	for _, seg := range strings.Split(raw, "/") {
		switch seg {
		case "", ".":
		case "..":
			if depth == 0 {
				return "", badRequest("the path %q climbs above / with '..'", raw)
			}
			depth--
		default:
			depth++
		}
	}
	// Each directory is a step of the walk that resolves links (resolve.go), a call to the daemon.
	if depth > maxDepth {
		return "", tooDeep("the path")
	}
	return path.Clean(raw), nil
}

// refused tells why no operation may touch p (a path resolved in the container), if none may: the Sandbox's
// secret files, whose readers are the Sandbox's own processes and not whoever may read its files, and the
// kernel's file systems.
func refused(p string) error {
	if within(p, dsv1alpha1.SecretFilesDir) {
		return forbidden("%s holds the Sandbox's secret files, which files never serves", dsv1alpha1.SecretFilesDir)
	}
	for _, d := range kernelDirs {
		if within(p, d) {
			return forbidden("%s is a kernel file system, which files does not serve", d)
		}
	}
	return nil
}

// within tells whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// writable checks that p (resolved) lies where the container can write and files can reach: a workspace
// volume, or a writable root; the container's own tmpfs mounts are out of the archive API's sight.
func (t Target) writable(p string) (*Mount, error) {
	m := t.mountOf(p)
	if m == nil && t.RootBytes == 0 {
		return nil, forbidden("%s is on the read-only root file system; write under %s", p, t.mountList())
	}
	return m, nil
}

// mountList names the writable mounts for a message: "/workspace, /data or /tmp".
func (t Target) mountList() string {
	var paths []string
	for _, m := range t.Mounts {
		paths = append(paths, m.Path)
	}
	if len(paths) < 2 {
		return strings.Join(paths, "")
	}
	return strings.Join(paths[:len(paths)-1], ", ") + " or " + paths[len(paths)-1]
}
