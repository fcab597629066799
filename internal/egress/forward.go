package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"
	"sync/atomic"
)

// forward sends one plain HTTP request to a permitted address and relays the answer, with Connection: close,
// both on c's clock. Redirects are relayed, never followed; a client that wants another host asks again, on a
// new connection, and is judged again.
func (p *Proxy) forward(s *session, c *timed, req *http.Request, t target, addrs []netip.Addr) {
	up, err := p.dialPermitted(s.ctx, s, addrs, t.port)
	if err != nil {
		p.dialFailed(c.Conn, req.Method, t, err)
		return
	}
	defer s.untrack(up)
	tup := &timed{Conn: up, k: c.k}
	var handed atomic.Bool
	transport := &http.Transport{
		// The Transport never dials: it gets the one connection made to an address decide permitted.
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if handed.Swap(true) {
				return nil, errOneConnection
			}
			return tup, nil
		},
		DisableKeepAlives:      true,
		DisableCompression:     true, // relay the body as the server encoded it
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	defer transport.CloseIdleConnections()
	resp, err := transport.RoundTrip(outgoing(s.ctx, req))
	if err != nil {
		reply(c.Conn, http.StatusBadGateway, "", fmt.Sprintf("Dockside egress proxy got no answer to %s from %s: %s", req.Method, t, oneLine(err)))
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	resp.Close = true
	_ = resp.Write(c)
}

var errOneConnection = errors.New("one connection per forwarded request")

// outgoing is the request as the destination gets it: origin-form, its Host header the host the allowlist
// judged (not a Host header the client chose), no hop-by-hop or Proxy-* headers, and no User-Agent added.
func outgoing(ctx context.Context, req *http.Request) *http.Request {
	out := req.Clone(ctx)
	out.RequestURI = ""
	out.Host = ""
	out.Close = true
	removeHopHeaders(out.Header)
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header.Set("User-Agent", "")
	}
	return out
}

// hopHeaders concern one connection, not the request: a proxy never passes them on (RFC 9110, 7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopHeaders removes hop-by-hop headers, those Connection names, and every Proxy-* header (credentials
// meant for a proxy are not the destination's business).
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
	for name := range h {
		if strings.HasPrefix(name, "Proxy-") {
			delete(h, name)
		}
	}
}

// oneLine is an error's text fit for a one-line answer.
func oneLine(err error) string {
	var lines []string
	for line := range strings.Lines(err.Error()) {
		lines = append(lines, strings.TrimSpace(line))
	}
	return strings.Join(lines, "; ")
}
