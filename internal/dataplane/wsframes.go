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
func boundWebSocket(r io.Reader) io.Reader {
	return &boundedFrames{r: r, format: webSocketFrames, max: maxChannelMessage}
}

// webSocketFrames is a WebSocket frame's header (RFC 6455, section 5.2): 2 bytes, then 2 or 8 more when the
// 7-bit length says 126 or 127, then a 4-byte mask when the mask bit is set.
var webSocketFrames = frameFormat{
	headerLength: func(seen []byte) int {
		if len(seen) < 2 {
			return 0
		}
		need := 2
		switch seen[1] & 0x7f {
		case 126:
			need += 2
		case 127:
			need += 8
		}
		if seen[1]&0x80 != 0 { // masked, as every client's frame is
			need += 4
		}
		return need
	},
	payloadLength: func(header []byte) uint64 {
		switch length := header[1] & 0x7f; length {
		case 126:
			return uint64(binary.BigEndian.Uint16(header[2:4]))
		case 127:
			return binary.BigEndian.Uint64(header[2:10])
		default:
			return uint64(length)
		}
	},
	tooLarge: errWebSocketFrameTooLarge,
}
