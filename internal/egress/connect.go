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
// until either side closes or c's clock runs out.
func (p *Proxy) tunnel(s *session, c *timed, br *bufio.Reader, t target, addrs []netip.Addr) {
	up, err := p.dialPermitted(s.ctx, s, addrs, t.port)
	if err != nil {
		p.dialFailed(c.Conn, http.MethodConnect, t, err)
		return
	}
	defer s.untrack(up)
	tup := &timed{Conn: up, k: c.k}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// A client may send its first bytes (a TLS ClientHello) right behind the CONNECT header.
	if n := br.Buffered(); n > 0 {
		head, _ := br.Peek(n)
		if _, err := tup.Write(head); err != nil {
			return
		}
	}
	splice(c, tup)
}

// tunnelBuffer is each direction's buffer: the copies go through the agent, not the kernel's splice(2), so
// that the clock sees every byte; 16 KiB each way keeps a node's 1024 tunnels within 32 MiB.
const tunnelBuffer = 16 << 10

// splice copies both ways until either direction ends (or the clock runs out), then closes both
// connections, so that neither side can hold the tunnel open after the other left.
func splice(a, b *timed) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.CopyBuffer(b, a, make([]byte, tunnelBuffer))
		_ = a.Close()
		_ = b.Close()
	}()
	_, _ = io.CopyBuffer(a, b, make([]byte, tunnelBuffer))
	_ = a.Close()
	_ = b.Close()
	wg.Wait()
}

// dialFailed answers a permitted destination that could not be reached: 502, not a refusal.
func (p *Proxy) dialFailed(c net.Conn, method string, t target, err error) {
	p.Log.V(1).Info("Egress destination unreachable", "destination", t.String(), "error", err.Error())
	reply(c, http.StatusBadGateway, "", fmt.Sprintf("Dockside egress proxy could not connect to %s for %s: %s", t, method, oneLine(err)))
}
