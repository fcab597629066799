package dataplane

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxChannelMessage bounds one message (all its frames) a client sends on an exec's WebSocket: one is read
// whole before it is handed to the command's stdin, which takes it at its own pace, so this is what a
// connection may hold of stdin. A larger one closes the connection with 1009 (message too big). The
// clients send far less: client-go 32 KiB a message, the Python client 32 KiB.
const maxChannelMessage = 1 << 20

// streamCloseSignal, followed by a channel's number, ends that channel's input (v5 only).
const streamCloseSignal = 255

var execUpgrader = websocket.Upgrader{
	Subprotocols: []string{v5Protocol, v4Protocol, v4Base64Protocol},
	// The caller is authenticated by a client certificate, not by a browser's cookie, so another origin gains
	// nothing; and the aggregator's Host is not the client's.
	CheckOrigin: func(*http.Request) bool { return true },
}

// channels is Kubernetes' channel protocol (v4, v4.base64, v5) over one WebSocket: every message is a
// channel's number and its bytes. The channels a client writes (stdin, resize) are pipes the command reads
// at its pace, one message at a time; the others are written to the WebSocket as messages.
type channels struct {
	ws          *websocket.Conn
	base64      bool
	streamClose bool // v5: the client may end a channel's input
	idle        time.Duration
	in          []*io.PipeReader // per channel, nil unless the client writes it
	feed        []*io.PipeWriter
	writeMu     sync.Mutex
	closeOnce   sync.Once
	tooBig      atomic.Bool // the client sent a message over maxChannelMessage
}

// openChannels completes the WebSocket handshake, reading from the client the channels of readable, and
// answers the client itself when it fails. A connection that carries nothing either way for idle ends.
func openChannels(w http.ResponseWriter, r *http.Request, readable []bool, idle time.Duration) (*channels, error) {
	if !slices.ContainsFunc(websocket.Subprotocols(r), func(p string) bool { return slices.Contains(execUpgrader.Subprotocols, p) }) {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			"the WebSocket protocols %v are not served: ask for one of %v", websocket.Subprotocols(r), execUpgrader.Subprotocols)
		return nil, errNoProtocol
	}
	ws, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, fmt.Errorf("the WebSocket handshake: %w", err)
	}
	ws.SetReadLimit(maxChannelMessage)
	c := &channels{ws: ws, base64: ws.Subprotocol() == v4Base64Protocol, streamClose: ws.Subprotocol() == v5Protocol, idle: idle,
		in: make([]*io.PipeReader, len(readable)), feed: make([]*io.PipeWriter, len(readable))}
	for i, read := range readable {
		if read {
			c.in[i], c.feed[i] = io.Pipe()
		}
	}
	go c.receive()
	return c, nil
}

var errNoProtocol = errors.New("no channel protocol in common")

// reader is what the client writes on channel n.
func (c *channels) reader(n int) io.Reader { return c.in[n] }

// writer writes to the client on channel n.
func (c *channels) writer(n int) io.WriteCloser { return channelWriter{c, byte(n)} }

// touch moves the idle deadline on: traffic either way keeps the connection.
func (c *channels) touch() {
	if c.idle > 0 {
		_ = c.ws.UnderlyingConn().SetDeadline(time.Now().Add(c.idle))
	}
}

// receive hands each message to its channel's reader, waiting until it is read, until the connection ends
// (a message over maxChannelMessage ends it: the WebSocket library closes it with 1009).
func (c *channels) receive() {
	defer c.Close()
	for {
		c.touch()
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			c.tooBig.Store(errors.Is(err, websocket.ErrReadLimit))
			return
		}
		if len(data) == 0 {
			continue
		}
		if c.streamClose && data[0] == streamCloseSignal {
			if len(data) != 2 || int(data[1]) >= len(c.feed) {
				return // a protocol error
			}
			if f := c.feed[data[1]]; f != nil {
				_ = f.Close()
			}
			continue
		}
		n := data[0]
		if c.base64 {
			n -= '0'
		}
		if int(n) >= len(c.feed) || c.feed[n] == nil {
			continue // a channel the command does not read
		}
		payload := data[1:]
		if c.base64 {
			decoded := make([]byte, base64.StdEncoding.DecodedLen(len(payload)))
			k, err := base64.StdEncoding.Decode(decoded, payload)
			if err != nil {
				return
			}
			payload = decoded[:k]
		}
		// Fails once the command stopped reading (its reader closed): the rest of the channel is dropped.
		_, _ = c.feed[n].Write(payload)
	}
}

func (c *channels) write(n byte, data []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.touch()
	if c.base64 {
		msg := append([]byte{'0' + n}, base64.StdEncoding.AppendEncode(nil, data)...)
		if err := c.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
			return 0, fmt.Errorf("writing channel %d: %w", n, err)
		}
		return len(data), nil
	}
	if err := c.ws.WriteMessage(websocket.BinaryMessage, append([]byte{n}, data...)); err != nil {
		return 0, fmt.Errorf("writing channel %d: %w", n, err)
	}
	return len(data), nil
}

// Close ends every channel and the connection.
func (c *channels) Close() {
	c.closeOnce.Do(func() {
		for i := range c.in {
			if c.in[i] != nil {
				_ = c.in[i].Close()
				_ = c.feed[i].Close()
			}
		}
		if !c.tooBig.Load() { // else the WebSocket library has sent 1009
			_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		}
		_ = c.ws.Close()
	})
}

// channelWriter is one channel the command writes to the client.
type channelWriter struct {
	c *channels
	n byte
}

func (w channelWriter) Write(p []byte) (int, error) { return w.c.write(w.n, p) }

// Close is the connection's to do (channels.Close): the other channels go on.
func (channelWriter) Close() error { return nil }
