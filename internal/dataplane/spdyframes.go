package dataplane

import (
	"errors"
	"io"
)

// maxSPDYFrame bounds one SPDY frame a client sends on an exec or a port-forward. spdystream reads frames of
// up to 16 MiB whole, and queues up to 50 in each of its 5 queues (a stream's frames go to one, by its ID)
// while their readers wait (the command's stdin, a forwarded port): 4 GiB a connection. client-go writes
// 32 KiB at a time; at 128 KiB a frame, an exec's stdin holds at most about 6.5 MiB, and a port-forward,
// whose streams reach all five queues, about 32 MiB a connection (docs/security.md, "The data plane's
// listener").
const maxSPDYFrame = 128 << 10

var errSPDYFrameTooLarge = errors.New("a SPDY frame longer than the data plane takes (128 KiB)")

// boundSPDY bounds the SPDY frames read of a connection at maxSPDYFrame.
func boundSPDY(r io.Reader) io.Reader { return &spdyFrames{r: r, max: maxSPDYFrame} }

// spdyFrames passes a SPDY connection's bytes through, and fails at the header of a frame longer than
// max, before anything reads its payload. Every SPDY frame, control or data, has an 8-byte header whose
// last 3 bytes are the payload's length.
type spdyFrames struct {
	r      io.Reader
	max    uint32
	header [8]byte
	have   int    // bytes of the current header seen
	left   uint32 // bytes of the current payload still to pass
	err    error
}

func (f *spdyFrames) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.r.Read(p)
	for i := 0; i < n; {
		if f.left > 0 {
			k := min(uint32(n-i), f.left)
			i += int(k)
			f.left -= k
			continue
		}
		f.header[f.have] = p[i]
		f.have++
		i++
		if f.have < len(f.header) {
			continue
		}
		f.have = 0
		f.left = uint32(f.header[5])<<16 | uint32(f.header[6])<<8 | uint32(f.header[7])
		if f.left > f.max {
			f.err = errSPDYFrameTooLarge
			return 0, f.err
		}
	}
	return n, err //nolint:wrapcheck // the connection's own error, passed through as a reader does
}
