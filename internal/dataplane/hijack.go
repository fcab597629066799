package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
)

// watchConnection makes the end of a hijacked connection cancel the request's context, and with bound (nil:
// none) bounds the frames read from it (boundSPDY, boundWebSocket). net/http cancels it when a handler returns or, for a request it still reads, when the client goes away; once a stream protocol
// (SPDY, WebSocket) hijacks the connection, nothing does, and a command that writes nothing would run on
// after its client left. Both protocols read their connection for as long as it lasts (frames, pings,
// stdin), so the first failed read, or a close, is its end (docs/design/dataplane.md, "Processes end with the
// exec"). The returned cancel must be called when the handler returns.
func watchConnection(w http.ResponseWriter, r *http.Request, bound func(io.Reader) io.Reader) (http.ResponseWriter, *http.Request, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	return &hijackWatch{ResponseWriter: w, cancel: cancel, bound: bound}, r.WithContext(ctx), cancel
}

// hijackWatch is a ResponseWriter whose hijacked connection cancels the request's context at its end.
type hijackWatch struct {
	http.ResponseWriter
	cancel context.CancelFunc
	bound  func(io.Reader) io.Reader // wraps what is read of the connection in its protocol's frame cap
}

var errNoHijack = errors.New("the connection cannot be taken over (no http.Hijacker)")

// Hijack hands out the connection wrapped, and a reader that reads through it: what net/http had buffered
// first, then the connection (its own buffered reader would read the connection past the wrapper).
func (h *hijackWatch) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errNoHijack
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err //nolint:wrapcheck // net/http's own error, passed through as a Hijacker does
	}
	wc := &watchedConn{Conn: conn, cancel: h.cancel}
	buffered, _ := brw.Peek(brw.Reader.Buffered())
	in := io.MultiReader(bytes.NewReader(bytes.Clone(buffered)), wc)
	if h.bound != nil {
		in = h.bound(in)
	}
	return wc, bufio.NewReadWriter(bufio.NewReader(in), brw.Writer), nil
}

// Flush passes on to the ResponseWriter, which a stream's handshake may flush.
func (h *hijackWatch) Flush() {
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the ResponseWriter.
func (h *hijackWatch) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// watchedConn cancels at its first failed read or at its close (cancel may be called again: it is idempotent).
type watchedConn struct {
	net.Conn
	cancel context.CancelFunc
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.cancel()
	}
	return n, err //nolint:wrapcheck // a net.Conn returns io.EOF as it is
}

func (c *watchedConn) Close() error {
	c.cancel()
	return c.Conn.Close() //nolint:wrapcheck // a net.Conn's own error
}
