package main

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/dockside-dev/dockside/internal/dataplane/files"
)

// openRegular opens the local regular file p to read it. A named pipe would block the open until something
// wrote to it, and a device would read without end: the open does not wait (O_NONBLOCK, which changes
// nothing for a regular file), and anything the opened file turns out to be but a regular file is refused.
// When follow is false a link is refused too (O_NOFOLLOW): an entry of a directory is sent as the link it is.
func openRegular(p string, follow bool) (*os.File, fs.FileInfo, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(p, flags, 0)
	if err != nil {
		return nil, nil, err //nolint:wrapcheck // the callers name what was being copied
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = notCopyable(p, st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// notCopyable refuses to copy p, which is neither a regular file, a directory nor a link.
func notCopyable(p string, m fs.FileMode) error {
	return fmt.Errorf("%s is %s: cp copies only regular files, directories and links", p, files.KindOf(m))
}
