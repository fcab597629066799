package dockerdriver

// headBuffer keeps the first limit bytes written to it and counts the rest, so output of any size is read
// to the end (the writer never blocks) while memory stays bounded.
type headBuffer struct {
	limit int
	buf   []byte
	cut   int64
}

func (h *headBuffer) Write(p []byte) (int, error) {
	keep := min(len(p), h.limit-len(h.buf))
	h.buf = append(h.buf, p[:keep]...)
	h.cut += int64(len(p) - keep)
	return len(p), nil
}

// tailBuffer keeps the last limit bytes written to it and counts what it dropped before them.
type tailBuffer struct {
	limit int
	buf   []byte
	cut   int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if n >= t.limit {
		t.cut += int64(len(t.buf) + n - t.limit)
		t.buf = append(t.buf[:0], p[n-t.limit:]...)
		return n, nil
	}
	if over := len(t.buf) + n - t.limit; over > 0 {
		// Shift in place instead of reslicing, so the backing array never grows past limit.
		t.buf = t.buf[:copy(t.buf, t.buf[over:])]
		t.cut += int64(over)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}
