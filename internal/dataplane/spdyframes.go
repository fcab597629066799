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
func boundSPDY(r io.Reader) io.Reader {
	return &boundedFrames{r: r, format: spdyFrames, max: maxSPDYFrame}
}

// spdyFrames is a SPDY frame's header: every frame, control or data, has an 8-byte header whose last 3
// bytes are the payload's length.
var spdyFrames = frameFormat{
	headerLength: func([]byte) int { return 8 },
	payloadLength: func(header []byte) uint64 {
		return uint64(header[5])<<16 | uint64(header[6])<<8 | uint64(header[7])
	},
	tooLarge: errSPDYFrameTooLarge,
}
