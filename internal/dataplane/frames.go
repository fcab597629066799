package dataplane

import "io"

// frameFormat is what boundedFrames needs to know of a protocol's frames: how long a header is, told by its
// first bytes, and how long the payload it announces is.
type frameFormat struct {
	// headerLength is the whole header's length, from the bytes of it seen so far; 0 while they cannot tell.
	// It is at most maxFrameHeader.
	headerLength func(seen []byte) int
	// payloadLength is the payload's length, from the whole header.
	payloadLength func(header []byte) uint64
	// tooLarge is the error of a frame whose payload is longer than the bound.
	tooLarge error
}

// maxFrameHeader is the longest header of the formats boundedFrames reads: a masked WebSocket frame's with a
// 64-bit length.
const maxFrameHeader = 14

// boundedFrames passes a connection's bytes through, and fails at the header of a frame whose payload is
// longer than max, before anything reads that payload.
type boundedFrames struct {
	r      io.Reader
	format frameFormat
	max    uint64
	header [maxFrameHeader]byte
	have   int    // bytes of the current header seen
	need   int    // the current header's length, 0 until its first bytes tell it
	left   uint64 // bytes of the current payload still to pass
	err    error
}

func (f *boundedFrames) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.r.Read(p)
	for i := 0; i < n; {
		if f.left > 0 {
			k := min(uint64(n-i), f.left)
			i += int(k)
			f.left -= k
			continue
		}
		f.header[f.have] = p[i]
		f.have++
		i++
		if f.need == 0 {
			f.need = f.format.headerLength(f.header[:f.have])
		}
		if f.need == 0 || f.have < f.need {
			continue
		}
		length := f.format.payloadLength(f.header[:f.have])
		f.have, f.need = 0, 0
		if length > f.max {
			f.err = f.format.tooLarge
			return 0, f.err
		}
		f.left = length
	}
	return n, err //nolint:wrapcheck // the connection's own error, passed through as a reader does
}
