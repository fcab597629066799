package files

// What one call may make the agent hold or walk, whatever a tenant put in its Sandbox or sends: every bound
// is answered with a Status that names it, before the agent's memory or the node's disk pays for more
// (docs/design/dataplane-files.md, "Bounds").
const (
	// maxDepth is how many directories deep a path may go, in a request and in a tar entry's name, and how
	// deep a recursive remove on the workspace's host side descends (one open directory per level).
	maxDepth = 256
	// maxListEntries is the most entries one list answers: it holds them all to sort them.
	maxListEntries = 10000
	// dirBatch is how many names a directory read takes at a time.
	dirBatch = 256
	// maxTarDirNames is how many bytes of directory names a tar stream in may make files remember (to
	// declare each parent once).
	maxTarDirNames = 16 << 20
	// DefaultMaxSpoolBytes is Handler.MaxSpoolBytes when unset: the default cap on one image's size, which
	// an image's own files cannot pass.
	DefaultMaxSpoolBytes = 20 << 30
	// tarSlack is what a single file's archive adds to its bytes: its headers (a long name's included) and
	// the padding up to the record's end.
	tarSlack = 64 << 10
)

// tooDeep refuses a path of more than maxDepth directories.
func tooDeep(what string) error {
	return badRequest("%s is more than %d directories deep, which files does not go", what, maxDepth)
}

// depthOf counts the directories of a clean relative or absolute path.
func depthOf(p string) int {
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && i < len(p)-1 {
			n++
		}
	}
	if p != "" && p != "/" && p != "." {
		n++
	}
	return n
}

// tooManyEntries refuses to list a directory of more than maxListEntries.
func tooManyEntries(p string) error {
	return tooLargeAnswer("%s has more than %d entries, more than files lists at once: list its subdirectories, or copy it out with op=tar", p, maxListEntries)
}

// spoolBound is the most a download of p may spool on the node's disk, and what bounds it in words: the size
// of the mount p lies in, which its files cannot really hold more than, or for the root the cap on the
// image's files (MaxSpoolBytes) plus what a writable root may add.
func (h *Handler) spoolBound(t Target, p string) (int64, string) {
	if m := t.mountOf(p); m != nil && m.SizeBytes > 0 {
		return m.SizeBytes + tarSlack, m.Name + " (" + sizeOf(m.SizeBytes) + ")"
	}
	limit := h.MaxSpoolBytes
	if limit <= 0 {
		limit = DefaultMaxSpoolBytes
	}
	return limit + t.RootBytes + tarSlack, "the node's cap on a download from the root file system (" + sizeOf(limit+t.RootBytes) + ")"
}

// sparse refuses a download of p, of size bytes, past the spool's limit: a file longer than where it lies can
// hold is sparse (holes read as zeros), and would take its whole length on the node's disk.
func sparse(p string, size, limit int64, where string) error {
	return tooLargeAnswer("%s is %s, more than %s holds (it is sparse, or grew past it): files does not copy it out through the node's disk; read its parts in the Sandbox", p, sizeOf(size), where)
}
