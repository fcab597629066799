// Package forwardclient is the client's end of the portforward subresource (docs/design/dataplane.md): the
// dialer kubectl port-forward uses, for the kubectl plugin, and sessions in which each connection to a port
// of a Sandbox is a pair of streams, for the E2B gateway's host routing (docs/e2b.md). It does not import the server.
package forwardclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// Dialer dials the portforward subresource at u as kubectl port-forward (1.31 and later) does: SPDY tunnelled
// through a WebSocket, falling back to SPDY when the upgrade is refused; websockets false goes straight to SPDY
// (kubectl's KUBECTL_PORT_FORWARD_WEBSOCKETS=false).
func Dialer(cfg *rest.Config, u *url.URL, websockets bool) (httpstream.Dialer, error) {
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the SPDY transport: %w", err)
	}
	dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	if !websockets {
		return dialer, nil
	}
	tunnel, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, cfg)
	if err != nil {
		return nil, fmt.Errorf("the WebSocket transport: %w", err)
	}
	return portforward.NewFallbackDialerForStreaming(tunnel, dialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// PortError is the server's refusal of a forwarded connection (nothing listens on the port, the container is
// gone), as it says it on the connection's error stream.
type PortError struct{ Message string }

func (e *PortError) Error() string { return e.Message }

// errorWait bounds how long a connection whose data ended waits for the server to close its error stream:
// the server writes the error, if any, and closes that stream as soon as the data stream ends.
const errorWait = 10 * time.Second

// Session is one port-forward session (one connection to the portforward subresource) in which each Dial
// opens a connection of its own, a pair of an error and a data stream, as kubectl port-forward opens one pair
// per local connection in the one session it keeps. The server ties a session to the container it began
// with and ends it when that container goes or is replaced (the Sandbox deleted or rebuilt), so no stream of
// it outlives its Sandbox; Done says when it ended.
type Session struct {
	conn httpstream.Connection
	next atomic.Int64 // the request ID of the next connection, which pairs its two streams
}

// Open opens a port-forward session with d. It is given up, and the session closed when it comes, once ctx
// ends first.
func Open(ctx context.Context, d httpstream.Dialer) (*Session, error) {
	type dialed struct {
		conn httpstream.Connection
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		conn, _, err := d.Dial(portforward.PortForwardProtocolV1Name)
		done <- dialed{conn, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("opening the port-forward session: %w", r.err)
		}
		return &Session{conn: r.conn}, nil
	case <-ctx.Done():
		go func() { // the dial goes on in the background: its connection, if any, is closed when it comes
			if r := <-done; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, fmt.Errorf("opening the port-forward session: %w", ctx.Err())
	}
}

// Done is closed when the session ended: closed by its client or cut by the server.
func (s *Session) Done() <-chan bool { return s.conn.CloseChan() }

// Close ends the session and every connection in it.
func (s *Session) Close() error {
	return s.conn.Close() //nolint:wrapcheck // the connection's own error
}

// Dial opens one connection to port in the session. Its Close ends that connection only. A refusal of the
// server reads as a *PortError from Read once the data ends, so that a port nothing listens on is told from a
// connection the port closed.
func (s *Session) Dial(port int) (net.Conn, error) {
	h := http.Header{}
	h.Set(corev1.PortHeader, strconv.Itoa(port))
	h.Set(corev1.PortForwardRequestIDHeader, strconv.FormatInt(s.next.Add(1)-1, 10))
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	errStream, err := s.conn.CreateStream(h)
	if err != nil {
		return nil, fmt.Errorf("opening the error stream of port %d: %w", port, err)
	}
	_ = errStream.Close() // the client writes nothing on it
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := s.conn.CreateStream(h)
	if err != nil {
		s.conn.RemoveStreams(errStream)
		return nil, fmt.Errorf("opening the data stream of port %d: %w", port, err)
	}
	c := &streamConn{conn: s.conn, data: data, errStream: errStream, errDone: make(chan struct{})}
	go func() {
		defer close(c.errDone)
		msg, _ := io.ReadAll(io.LimitReader(errStream, 64<<10))
		c.errMsg = strings.TrimSpace(string(msg))
	}()
	return c, nil
}

// streamConn is a forwarded connection as a net.Conn: its data stream, and its error stream read in the
// background.
type streamConn struct {
	conn      httpstream.Connection // the session's
	data      httpstream.Stream
	errStream httpstream.Stream
	errDone   chan struct{}
	errMsg    string // set before errDone closes
	once      sync.Once
}

func (c *streamConn) Read(b []byte) (int, error) {
	n, err := c.data.Read(b)
	if err != nil && n == 0 {
		select {
		case <-c.errDone:
		case <-c.conn.CloseChan():
		case <-time.After(errorWait):
		}
		select {
		case <-c.errDone:
			if c.errMsg != "" {
				return 0, &PortError{Message: c.errMsg}
			}
		default:
		}
	}
	return n, err //nolint:wrapcheck // io.EOF must reach the reader as it is
}

func (c *streamConn) Write(b []byte) (int, error) {
	return c.data.Write(b) //nolint:wrapcheck // the stream's own error, as a net.Conn gives it
}

// Close ends this connection: its data stream is reset, so that the server ends its side of it at once, and
// both streams are forgotten by the session, which goes on.
func (c *streamConn) Close() error {
	var err error
	c.once.Do(func() {
		err = c.data.Reset()
		c.conn.RemoveStreams(c.data, c.errStream)
	})
	return err //nolint:wrapcheck // the stream's own error
}

func (c *streamConn) LocalAddr() net.Addr  { return forwardAddr{} }
func (c *streamConn) RemoteAddr() net.Addr { return forwardAddr{} }

// Deadlines are not kept by the streams; the session's context (the request's) bounds it instead.
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

type forwardAddr struct{}

func (forwardAddr) Network() string { return "portforward" }
func (forwardAddr) String() string  { return "portforward" }

// IsPortError says whether err is the server's refusal of a forwarded connection.
func IsPortError(err error) bool {
	var pe *PortError
	return errors.As(err, &pe)
}
