package dataplane

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// execSocket starts an exec of a command that handler plays, over a WebSocket of protocol, and returns the
// client's end.
func execSocket(t *testing.T, protocol string, handler func(context.Context, string, dd.StreamExecRequest) int) *websocket.Conn {
	t.Helper()
	g := NewWithT(t)
	d, container := runningPrimary(t)
	d.SetStreamExecHandler(handler)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveExec(w, r, executor{driver: d}, container)
	}))
	t.Cleanup(srv.Close)
	dialer := websocket.Dialer{Subprotocols: []string{protocol}}
	ws, resp, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/exec?command=cat&stdin=true&stdout=true", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = ws.Close() })
	g.Expect(ws.Subprotocol()).To(Equal(protocol))
	return ws
}

// The channel protocols carry stdin to the command and its output back, in binary (v5, v4) and base64 (v4.base64);
// v5's close signal ends stdin.
func TestChannelsCarryStdinAndStdout(t *testing.T) {
	cat := func(_ context.Context, _ string, req dd.StreamExecRequest) int {
		_, _ = io.Copy(req.Stdout, req.Stdin)
		return 0
	}
	for _, protocol := range []string{v5Protocol, v4Base64Protocol} {
		t.Run(protocol, func(t *testing.T) {
			g := NewWithT(t)
			ws := execSocket(t, protocol, cat)
			b64 := protocol == v4Base64Protocol
			send := func(channel byte, data []byte) {
				if b64 {
					g.Expect(ws.WriteMessage(websocket.TextMessage, append([]byte{'0' + channel}, base64.StdEncoding.AppendEncode(nil, data)...))).To(Succeed())
					return
				}
				g.Expect(ws.WriteMessage(websocket.BinaryMessage, append([]byte{channel}, data...))).To(Succeed())
			}
			size := maxChannelMessage - 1 // the largest message there is room for: the channel's byte and its data
			if b64 {
				size = 3 * ((maxChannelMessage - 1) / 4)
			}
			payload := bytes.Repeat([]byte("x"), size)
			send(stdinChannel, payload)
			if protocol == v5Protocol {
				g.Expect(ws.WriteMessage(websocket.BinaryMessage, []byte{streamCloseSignal, stdinChannel})).To(Succeed())
			}
			var got []byte
			for len(got) < len(payload) {
				_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
				_, msg, err := ws.ReadMessage()
				g.Expect(err).NotTo(HaveOccurred())
				channel, data := msg[0], msg[1:]
				if b64 {
					channel -= '0'
					data, err = base64.StdEncoding.AppendDecode(nil, data)
					g.Expect(err).NotTo(HaveOccurred())
				}
				g.Expect(channel).To(BeEquivalentTo(stdoutChannel))
				got = append(got, data...)
			}
			g.Expect(got).To(Equal(payload))
			if protocol == v5Protocol {
				_, msg, err := ws.ReadMessage()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(msg[0]).To(BeEquivalentTo(errorChannel))
				g.Expect(string(msg[1:])).To(ContainSubstring(`"status":"Success"`), "stdin ended, so did cat")
			}
		})
	}
}

// A client's message over maxChannelMessage, in one frame or in several, closes the connection with 1009
// (message too big) and ends the command, which never read its stdin: nothing of it is held.
func TestChannelsRefuseMessagesOverTheCap(t *testing.T) {
	for name, frames := range map[string]int{"one frame": 1, "fragments": 4} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ended := make(chan struct{})
			ws := execSocket(t, v5Protocol, func(ctx context.Context, _ string, _ dd.StreamExecRequest) int {
				<-ctx.Done() // reads no stdin
				close(ended)
				return 0
			})
			w, err := ws.NextWriter(websocket.BinaryMessage)
			g.Expect(err).NotTo(HaveOccurred())
			piece := bytes.Repeat([]byte("y"), 2*maxChannelMessage/frames)
			piece[0] = stdinChannel
			for range frames { // gorilla sends each Write past its buffer as a frame of its own
				_, err := w.Write(piece)
				if err != nil {
					break // the server closed before the whole message was sent
				}
			}
			_ = w.Close()
			_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, _, err = ws.ReadMessage() // the first output message is empty: the streams are up
			g.Expect(err).NotTo(HaveOccurred())
			_, _, err = ws.ReadMessage()
			g.Expect(websocket.IsCloseError(err, websocket.CloseMessageTooBig)).To(BeTrue(), "%v", err)
			g.Eventually(ended, 30*time.Second).Should(BeClosed(), "the command ends with its connection")
		})
	}
}

// A client that asks for no protocol the server speaks is told which ones it does.
func TestChannelsNeedAProtocol(t *testing.T) {
	g := NewWithT(t)
	d, container := runningPrimary(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveExec(w, r, executor{driver: d}, container)
	}))
	defer srv.Close()
	dialer := websocket.Dialer{Subprotocols: []string{"channel.k8s.io"}}
	_, resp, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/exec?command=true&stdout=true", nil)
	g.Expect(err).To(HaveOccurred())
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
	g.Expect(string(body)).To(ContainSubstring("ask for one of [v5.channel.k8s.io v4.channel.k8s.io v4.base64.channel.k8s.io]"))
}
