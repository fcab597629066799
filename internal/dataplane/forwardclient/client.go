// Package forwardclient is the client's end of the portforward subresource (docs/design/dataplane.md): the
// dialer kubectl port-forward uses, for the kubectl plugin, and one connection to a port of a Sandbox over a
// session of its own, for the E2B gateway's host routing (docs/e2b.md). It does not import the server.
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

// Dial opens a port-forward session with d and one connection in it to port, as kubectl port-forward does for
// each local connection (a pair of an error and a data stream). The connection's Close ends the session. A
// refusal of the server reads as a *PortError from Read once the data ends, so that a port nothing listens on
// is told from a connection the port closed.
func Dial(ctx context.Context, d httpstream.Dialer, port int) (net.Conn, error) {
	type dialed struct {
		conn httpstream.Connection
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		conn, _, err := d.Dial(portforward.PortForwardProtocolV1Name)
		done <- dialed{conn, err}
	}()
	var conn httpstream.Connection
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("opening the port-forward session: %w", r.err)
		}
		conn = r.conn
	case <-ctx.Done():
		go func() { // the dial goes on in the background: its connection, if any, is closed when it comes
			if r := <-done; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, fmt.Errorf("opening the port-forward session: %w", ctx.Err())
	}
	h := http.Header{}
	h.Set(corev1.PortHeader, strconv.Itoa(port))
	h.Set(corev1.PortForwardRequestIDHeader, "0")
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	errStream, err := conn.CreateStream(h)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("opening the error stream of port %d: %w", port, err)
	}
	_ = errStream.Close() // the client writes nothing on it
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(h)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("opening the data stream of port %d: %w", port, err)
	}
	c := &streamConn{conn: conn, data: data, errDone: make(chan struct{})}
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
	conn    httpstream.Connection
	data    httpstream.Stream
	errDone chan struct{}
	errMsg  string // set before errDone closes
	once    sync.Once
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

// Close ends the session: the data stream, and the connection under it.
func (c *streamConn) Close() error {
	var err error
	c.once.Do(func() {
		_ = c.data.Close()
		err = c.conn.Close()
	})
	return err //nolint:wrapcheck // the connection's own error
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
