package dataplane

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gorilla/websocket"
	. "github.com/onsi/gomega"
)

// Frames up to the cap pass whole, in every length form a header has (7, 16 and 64 bits, masked or not),
// whatever the reads cut them into; the first longer one fails the read at its header, before its payload.
func TestWebSocketFramesAreBounded(t *testing.T) {
	g := NewWithT(t)
	var wire bytes.Buffer
	frame := func(payload []byte, masked bool) {
		wire.WriteByte(0x82) // FIN, binary
		mask := byte(0)
		if masked {
			mask = 0x80
		}
		switch n := len(payload); {
		case n < 126:
			wire.WriteByte(mask | byte(n))
		case n < 1<<16:
			wire.WriteByte(mask | 126)
			_ = binary.Write(&wire, binary.BigEndian, uint16(n))
		default:
			wire.WriteByte(mask | 127)
			_ = binary.Write(&wire, binary.BigEndian, uint64(n))
		}
		if masked {
			wire.Write([]byte{1, 2, 3, 4}) // the payload's bytes are not looked at, masked or not
		}
		wire.Write(payload)
	}
	frame([]byte("hi"), true)
	frame(nil, false)
	frame(bytes.Repeat([]byte("a"), 300), true)
	frame(bytes.Repeat([]byte("b"), maxChannelMessage), true)
	frame(bytes.Repeat([]byte("c"), 125), false)
	fits := bytes.Clone(wire.Bytes())
	got, err := io.ReadAll(iotest.OneByteReader(boundWebSocket(bytes.NewReader(fits))))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(fits))

	frame(bytes.Repeat([]byte("d"), maxChannelMessage+1), true)
	got, err = io.ReadAll(boundWebSocket(bytes.NewReader(wire.Bytes())))
	g.Expect(err).To(MatchError(errWebSocketFrameTooLarge))
	g.Expect(len(got)).To(BeNumerically("<=", len(fits)+14), "nothing of the long frame's payload is passed on")
}

// portForwardServer serves a port-forward to the Sandbox's primary, at 127.0.0.1.
func portForwardServer(t *testing.T) *httptest.Server {
	d, _ := runningPrimary(t)
	sbx := primarySandbox()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servePortForward(w, r, loopbackIP{d}, sbx)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// spdyHeader is a SPDY data frame's header for stream, announcing length bytes of payload.
func spdyHeader(stream uint32, length int) []byte {
	h := binary.BigEndian.AppendUint32(nil, stream&0x7fffffff)
	return append(h, 0, byte(length>>16), byte(length>>8), byte(length))
}

// A port-forward over plain SPDY ends its connection at the header of a frame over the cap; a frame within
// it (for a stream that does not exist, which spdystream drops) leaves the connection open.
func TestPortForwardSPDYFramesAreBounded(t *testing.T) {
	g := NewWithT(t)
	srv := portForwardServer(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	_, err = fmt.Fprint(conn, "POST /portforward HTTP/1.1\r\nHost: agent\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"+
		"X-Stream-Protocol-Version: portforward.k8s.io\r\nContent-Length: 0\r\n\r\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conn.SetReadDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusSwitchingProtocols))

	_, err = conn.Write(append(spdyHeader(99, 16), make([]byte, 16)...))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(closedByServer(conn, time.Second)).To(BeFalse(), "a frame within the cap is taken")
	_, err = conn.Write(spdyHeader(99, 1<<24-1)) // 16 MiB, the most SPDY can say; its payload never comes
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(closedByServer(conn, 30*time.Second)).To(BeTrue(), "the connection ends at the long frame's header")
}

// Through the WebSocket tunnel (kubectl 1.31 and later), the SPDY frames inside are bounded the same way.
func TestPortForwardTunnelledSPDYFramesAreBounded(t *testing.T) {
	g := NewWithT(t)
	srv := portForwardServer(t)
	ws, resp, err := (&websocket.Dialer{Subprotocols: []string{"SPDY/3.1+portforward.k8s.io"}}).Dial(
		"ws"+strings.TrimPrefix(srv.URL, "http")+"/portforward", nil)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	defer ws.Close()
	g.Expect(ws.WriteMessage(websocket.BinaryMessage, append(spdyHeader(99, 16), make([]byte, 16)...))).To(Succeed())
	g.Expect(closedByServer(ws.NetConn(), time.Second)).To(BeFalse(), "a frame within the cap is taken")
	g.Expect(ws.WriteMessage(websocket.BinaryMessage, spdyHeader(99, 1<<24-1))).To(Succeed())
	g.Expect(closedByServer(ws.NetConn(), 30*time.Second)).To(BeTrue(), "the connection ends at the long frame's header")
}

// Over the WebSocket channel protocol (ports in the query, as the Python client asks), a message within
// the cap reaches the port and comes back, and a longer one ends the connection.
func TestPortForwardWebSocketChannelMessagesAreBounded(t *testing.T) {
	g := NewWithT(t)
	echo, _ := lineEcho(t)
	srv := portForwardServer(t)
	// Each message in one frame, as the Python client sends it: the server (golang.org/x/net/websocket) takes
	// every frame for a message of its own.
	ws, resp, err := (&websocket.Dialer{Subprotocols: []string{"v4.channel.k8s.io"}, WriteBufferSize: 2 << 20}).Dial(
		fmt.Sprintf("ws%s/portforward?port=%d", strings.TrimPrefix(srv.URL, "http"), echo), nil)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	defer ws.Close()
	g.Expect(ws.SetReadDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
	payload := bytes.Repeat([]byte("x"), 512<<10)
	g.Expect(ws.WriteMessage(websocket.BinaryMessage, append([]byte{0}, payload...))).To(Succeed())
	var back []byte
	named := map[byte]bool{}
	for len(back) < len(payload) {
		_, msg, err := ws.ReadMessage()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(msg).NotTo(BeEmpty())
		if !named[msg[0]] { // each channel's first message names its port
			named[msg[0]] = true
			continue
		}
		g.Expect(msg[0]).To(BeEquivalentTo(0), "data comes on the port's data channel")
		back = append(back, msg[1:]...)
	}
	g.Expect(back).To(Equal(payload))

	// The server may end the connection at the long frame's header, before the client has written the rest: a
	// reset write is that same refusal.
	if err := ws.WriteMessage(websocket.BinaryMessage, append([]byte{0}, make([]byte, maxChannelMessage)...)); err != nil {
		g.Expect(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)).To(BeTrue(), "the write ends with the connection: %v", err)
		return
	}
	g.Expect(closedByServer(ws.NetConn(), 30*time.Second)).To(BeTrue(), "the connection ends at the long message")
}
