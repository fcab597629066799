package dataplane

import (
	"encoding/binary"
	"errors"
	"io"
)

var errWebSocketFrameTooLarge = errors.New("a WebSocket frame longer than the data plane takes (1 MiB)")

// boundWebSocket bounds the WebSocket frames read of a connection at maxChannelMessage. It serves the
// channel protocol of a port-forward (wsstream, over golang.org/x/net/websocket), which reads each frame
// whole as a message of up to 32 MiB and holds it until the port takes it.
func boundWebSocket(r io.Reader) io.Reader { return &webSocketFrames{r: r, max: maxChannelMessage} }

// webSocketFrames passes a WebSocket connection's bytes through, and fails at the header of a frame whose
// payload is longer than max, before anything reads it. A frame's header (RFC 6455, section 5.2) is 2
// bytes, then 2 or 8 more when the 7-bit length says 126 or 127, then a 4-byte mask when the mask bit is set.
type webSocketFrames struct {
	r      io.Reader
	max    uint64
	header [14]byte
	have   int    // bytes of the current header seen
	need   int    // the current header's length, known from its second byte
	left   uint64 // bytes of the current payload still to pass
	err    error
}

func (f *webSocketFrames) Read(p []byte) (int, error) {
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
		if f.have == 2 {
			f.need = 2
			switch f.header[1] & 0x7f {
			case 126:
				f.need += 2
			case 127:
				f.need += 8
			}
			if f.header[1]&0x80 != 0 { // masked, as every client's frame is
				f.need += 4
			}
		}
		if f.have < 2 || f.have < f.need {
			continue
		}
		length := uint64(f.header[1] & 0x7f)
		switch length {
		case 126:
			length = uint64(binary.BigEndian.Uint16(f.header[2:4]))
		case 127:
			length = binary.BigEndian.Uint64(f.header[2:10])
		}
		f.have, f.need = 0, 0
		if length > f.max {
			f.err = errWebSocketFrameTooLarge
			return 0, f.err
		}
		f.left = length
	}
	return n, err //nolint:wrapcheck // the connection's own error, passed through as a reader does
}
