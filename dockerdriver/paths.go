package dockerdriver

import (
	"io/fs"
	"time"
)

// PathStat is what the daemon's archive API reports of one path in a container (docker cp's stat): the path
// is resolved in the container's own root, every symlink but the last followed.
type PathStat struct {
	Name  string      // base name
	Size  int64       // bytes of a regular file
	Mode  fs.FileMode // type and permission bits
	Mtime time.Time
	// LinkTarget is, for a symlink, the path it leads to, resolved in the container's root (an absolute path
	// in the container, every link on the way followed); "" for anything else.
	LinkTarget string
}

// IsDir tells whether the path is a directory.
func (s PathStat) IsDir() bool { return s.Mode.IsDir() }
