package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Open listens on gateway:Port and serves there until Close(gateway) or Stop. It is idempotent: a gateway
// already served is left as it is.
func (p *Proxy) Open(gateway netip.Addr) error {
	// p.mu is held throughout, so that a Stop cannot end the session between its lookup and the listener's
	// registration.
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sessionLocked()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.gateways[gateway]; ok {
		return nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(gateway.String(), strconv.Itoa(p.Port)))
	if err != nil {
		return fmt.Errorf("listening for the egress proxy: %w", err)
	}
	s.gateways[gateway] = l
	s.listeners[l] = struct{}{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.removeListener(l)
		if err := p.accept(s, l); err != nil {
			p.Log.Error(err, "Egress proxy listener failed", "gateway", gateway)
		}
	}()
	return nil
}

// Close stops listening on gateway. Connections already accepted there go on until they end or Stop.
// Idempotent.
func (p *Proxy) Close(gateway netip.Addr) {
	p.mu.Lock()
	s := p.cur
	p.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	l, ok := s.gateways[gateway]
	delete(s.gateways, gateway)
	s.mu.Unlock()
	if ok {
		_ = l.Close()
	}
}

// Keep serves on exactly these gateways: it opens those not served yet and closes the others. A gateway that
// cannot be opened now is logged and left to the next Keep or Open.
func (p *Proxy) Keep(gateways []netip.Addr) {
	keep := make(map[netip.Addr]bool, len(gateways))
	for _, gw := range gateways {
		keep[gw] = true
		if err := p.Open(gw); err != nil {
			p.Log.Error(err, "Serving the egress proxy", "gateway", gw)
		}
	}
	for _, gw := range p.served() {
		if !keep[gw] {
			p.Close(gw)
		}
	}
}

// served lists the gateways the proxy listens on.
func (p *Proxy) served() []netip.Addr {
	p.mu.Lock()
	s := p.cur
	p.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]netip.Addr, 0, len(s.gateways))
	for gw := range s.gateways {
		out = append(out, gw)
	}
	return out
}

// Addr is the address Open listens on for gateway (its port is the one the system chose when Port is 0).
func (p *Proxy) Addr(gateway netip.Addr) (netip.AddrPort, bool) {
	p.mu.Lock()
	s := p.cur
	p.mu.Unlock()
	if s == nil {
		return netip.AddrPort{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.gateways[gateway]
	if !ok {
		return netip.AddrPort{}, false
	}
	return l.Addr().(*net.TCPAddr).AddrPort(), true
}

// Serve serves one listener until it is closed (by its owner, Close or Stop), then returns nil; it returns
// an error only when accepting fails for good.
func (p *Proxy) Serve(l net.Listener) error {
	s := p.session()
	if !s.addListener(l) {
		return nil
	}
	defer s.removeListener(l)
	return p.accept(s, l)
}

// Stop closes every listener and every connection, tunnels included, and returns once every goroutine of
// the proxy has ended. The proxy may be opened again afterwards.
func (p *Proxy) Stop() {
	p.mu.Lock()
	s := p.cur
	p.cur = nil
	p.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

// session is the current session, made on first use.
func (p *Proxy) session() *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessionLocked()
}

func (p *Proxy) sessionLocked() *session {
	if p.cur == nil {
		p.cur = newSession(p.MaxConns, p.MaxConnsPerSandbox)
	}
	return p.cur
}

// accept hands each connection of l to admit. Like net/http, it waits and tries again after a temporary
// error (out of descriptors) instead of giving up the listener.
func (p *Proxy) accept(s *session, l net.Listener) error {
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.isStopped() {
				return nil
			}
			if te, ok := err.(interface{ Temporary() bool }); !ok || !te.Temporary() {
				return fmt.Errorf("accepting egress connections: %w", err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		p.admit(s, c)
	}
}
