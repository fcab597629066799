package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
)

// tunnel answers an allowed CONNECT: it dials a permitted address, says so, and splices the two connections
// until either side closes.
func (p *Proxy) tunnel(s *session, c net.Conn, br *bufio.Reader, t target, addrs []netip.Addr) {
	up, err := p.dialPermitted(s.ctx, s, addrs, t.port)
	if err != nil {
		p.dialFailed(c, http.MethodConnect, t, err)
		return
	}
	defer s.untrack(up)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// A client may send its first bytes (a TLS ClientHello) right behind the CONNECT header.
	if n := br.Buffered(); n > 0 {
		head, _ := br.Peek(n)
		if _, err := up.Write(head); err != nil {
			return
		}
	}
	splice(c, up)
}

// splice copies both ways until either direction ends, then closes both connections, so that neither side
// can hold the tunnel open after the other left. Copies between TCP connections go through the kernel
// (splice(2)), with no buffer in the agent.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(b, a)
		_ = a.Close()
		_ = b.Close()
	}()
	_, _ = io.Copy(a, b)
	_ = a.Close()
	_ = b.Close()
	wg.Wait()
}

// dialFailed answers a permitted destination that could not be reached: 502, not a refusal.
func (p *Proxy) dialFailed(c net.Conn, method string, t target, err error) {
	p.Log.V(1).Info("Egress destination unreachable", "destination", t.String(), "error", err.Error())
	reply(c, http.StatusBadGateway, "", fmt.Sprintf("Dockside egress proxy could not connect to %s for %s: %s", t, method, oneLine(err)))
}
