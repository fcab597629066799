package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// Bounds on what a client may make the proxy hold.
const (
	headerTimeout    = 10 * time.Second // to send the whole request header
	overLimitTimeout = 2 * time.Second  // to send it when over a limit
	maxHeaderBytes   = 64 << 10
)

// serveConn handles one client connection: who is it, what does it ask, may it; then a tunnel or one
// forwarded request.
// src is who ip was found to be; unless fresh (looked up for this very connection), it is looked up again
// before the request is judged, so that no list is applied to an address its Sandbox no longer holds.
func (p *Proxy) serveConn(s *session, c net.Conn, ip netip.Addr, src Source, known, fresh bool) {
	timeout := headerTimeout
	if p.headerTimeout > 0 {
		timeout = p.headerTimeout
	}
	tc := &timed{Conn: c}
	br, req, r := readRequest(c, tc, timeout)
	if r != nil {
		p.refuse(c, src, known, "", "", r)
		return
	}
	if req == nil {
		return // closed without asking anything
	}
	if !fresh {
		src, known = p.lookup(s.ctx, ip)
		s.sources.put(ip, src, known, time.Now())
	}
	if !known {
		p.refuse(c, src, known, req.Method, destOf(req), &Refusal{Reason: ReasonUnknownSource,
			Message: fmt.Sprintf("the connection comes from %s, which is not an Isolated Sandbox of this node", ip)})
		return
	}
	t, r := parseTarget(req)
	if r != nil {
		p.refuse(c, src, known, req.Method, quoted(req.RequestURI), r)
		return
	}
	addrs, r := p.decide(s.ctx, src, t)
	if r != nil {
		p.refuse(c, src, known, req.Method, t.String(), r)
		return
	}
	tc.k = p.newClock() // the request body, the tunnel and the answer are on it from here
	if req.Method == http.MethodConnect {
		p.tunnel(s, tc, br, t, addrs)
		return
	}
	p.forward(s, tc, req, t, addrs)
}

// refuseOverLimit answers a connection over a limit with TooManyConnections, after reading its request (for
// a short while) so that the answer names the destination and the client reads it rather than a reset.
func (p *Proxy) refuseOverLimit(c net.Conn, src Source, known bool, over string) {
	r := &Refusal{Reason: ReasonBusy, Message: over}
	_, req, _ := readRequest(c, c, overLimitTimeout)
	if req == nil {
		p.refuse(c, src, known, "", "", r)
		return
	}
	p.refuse(c, src, known, req.Method, destOf(req), r)
}

// destOf names a request's destination in a refusal: host:port when it parses, else the target quoted.
func destOf(req *http.Request) string {
	if t, bad := parseTarget(req); bad == nil {
		return t.String()
	}
	return quoted(req.RequestURI)
}

// readRequest reads one request header from c, through r, within timeout and maxHeaderBytes. It returns a
// nil request and no refusal when the client closed without sending anything. The reader holds any bytes the
// client sent past the header (the start of a TLS handshake after CONNECT), and reads the body through r.
func readRequest(c net.Conn, r io.Reader, timeout time.Duration) (*bufio.Reader, *http.Request, *Refusal) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	lr := &io.LimitedReader{R: r, N: maxHeaderBytes}
	br := bufio.NewReader(lr)
	req, err := http.ReadRequest(br)
	_ = c.SetReadDeadline(time.Time{})
	tooLarge := lr.N == 0
	lr.N = math.MaxInt64 // the header's bound is not the body's
	switch {
	case err == nil:
		return br, req, nil
	case tooLarge:
		return nil, nil, badRequest("the request header is larger than %d KiB", maxHeaderBytes>>10)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, nil, nil
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return nil, nil, badRequest("no complete request header within %s", timeout)
	}
	return nil, nil, badRequest("malformed request: %s", quoted(err.Error()))
}

// refuse counts a refusal, reports it and answers it.
func (p *Proxy) refuse(c net.Conn, src Source, known bool, method, dest string, r *Refusal) {
	countRefused(r)
	if p.OnRefused != nil {
		p.OnRefused(src, known, dest, r)
	}
	line := "Dockside egress proxy refused the request: " + r.Message
	if dest != "" {
		line = fmt.Sprintf("Dockside egress proxy refused %s to %s: %s", method, dest, r.Message)
	}
	reply(c, r.statusCode(), r.Reason, line)
}

// reply writes a complete one-line plain-text answer and closes the connection's write side gently: it
// drains what the client still sends for a moment, so that closing with unread data does not reset the
// connection before the client reads the answer.
func reply(c net.Conn, code int, reason, line string) {
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	refusal := ""
	if reason != "" {
		refusal = "X-Dockside-Refusal: " + reason + "\r\n"
	}
	body := line + "\n"
	_, err := fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n%sConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), refusal, body)
	if err != nil {
		return
	}
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.CopyN(io.Discard, c, 1<<20)
}
