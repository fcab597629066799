package checkpoint

import (
	"errors"
	"io"
)

// errCaptureTooLarge: the archive grew past what the workspace can hold as real data. Docker's archive API
// writes every file in full, so a sparse file (one `truncate -s 2G`) that takes no room in the tmpfs would
// take gigabytes in the archive; the capture is cut off instead.
var errCaptureTooLarge = errors.New("the workspace archive passed the workspace's size plus archive overhead")

// captureBound is the most a capture of a workspace of the given size may write: the size, an eighth more,
// and 1 MiB. Docker's archive API writes a 512-byte USTAR header per entry (PAX records only for names past
// 100 bytes) and pads data to 512 bytes, while every file with data holds at least one 4 KiB page of the
// tmpfs: headers add at most an eighth to the pages a full workspace holds (measured: 1000 files of 4 KiB,
// 4,096,000 bytes in the tmpfs, 4,609,536 in the archive). The MiB covers the end-of-archive marker and
// about 2000 entries that hold no page (folders, empty files, links, long names).
func captureBound(workspaceBytes int64) int64 {
	return workspaceBytes + workspaceBytes/8 + 1<<20
}

// boundedWriter passes writes on to w while they fit in left bytes, and refuses, writing nothing, the
// write that would go past: the copy feeding it stops there, without reading the rest of its source.
type boundedWriter struct {
	w    io.Writer
	left int64
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		return 0, errCaptureTooLarge
	}
	n, err := b.w.Write(p)
	b.left -= int64(n)
	return n, err //nolint:wrapcheck // a Writer hands on its writer's error as it is; the copy that calls it wraps
}
