package egress

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Source is who connects: the agent maps a source IP to the Sandbox that owns it.
type Source struct {
	Namespace, Name string
	Allow           Allowlist
}

// Sources finds the Sandbox behind a connection's source address.
type Sources interface {
	// Lookup returns false when ip is not an Isolated Sandbox of this node.
	Lookup(ctx context.Context, ip netip.Addr) (Source, bool)
}

// Resolver resolves names; *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Proxy is the HTTP(S) forward proxy the agent serves to Isolated Sandboxes on each of their gateways. It
// takes CONNECT host:port and absolute-form http:// requests, one request per client connection, and lets
// through only what the source's Allowlist and the Policy permit (see decide). Its fields are read as the
// proxy serves: set them before the first Open or Serve.
type Proxy struct {
	Port     int // listening port on each gateway (Open)
	Policy   Policy
	Sources  Sources
	Resolver Resolver // nil: net.DefaultResolver
	// Dial connects to an address the Policy accepted; addr is always ip:port. nil: a net.Dialer with a 10 s
	// timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnRefused is called for every refusal (rate limiting is the caller's). dest is host:port as asked, or
	// the request target quoted when it could not be parsed, or "" when no request was read. The one
	// exception: in a flood, connections over a limit beyond maxOverLimit are closed unanswered, counted in
	// the metric but not reported, since reporting them would need the very goroutines the limit saves.
	OnRefused         func(src Source, known bool, dest string, r *Refusal)
	MaxConns          int // whole proxy, default DefaultMaxConns
	MaxConnsPerSource int // per source IP, default DefaultMaxConnsPerSource
	Log               logr.Logger

	headerTimeout time.Duration // tests only; 0: the 10 s default

	mu  sync.Mutex
	cur *session
}

// admit takes an accepted connection: within the limits it is served, over them it is answered
// TooManyConnections (or, when too many such answers are under way, closed at once).
func (p *Proxy) admit(s *session, c net.Conn) {
	ip := sourceIP(c)
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		_ = c.Close()
		return
	}
	over := s.limits.take(ip)
	if over != "" && s.limits.overLimit >= maxOverLimit {
		s.mu.Unlock()
		_ = c.Close()
		countRefused(&Refusal{Reason: ReasonBusy})
		return
	}
	if over != "" {
		s.limits.overLimit++
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()

	go func() {
		defer s.wg.Done()
		defer func() {
			s.untrack(c)
			s.mu.Lock()
			if over != "" {
				s.limits.overLimit--
			} else {
				s.limits.give(ip)
			}
			s.mu.Unlock()
		}()
		if over != "" {
			p.refuseOverLimit(s, c, ip, over)
			return
		}
		p.serveConn(s, c, ip)
	}()
}

// sourceIP is the connection's remote address, IPv4-mapped forms unmapped; invalid when it has none (which
// no Sources knows).
func sourceIP(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// lookup asks Sources who ip is, within lookupTimeout.
func (p *Proxy) lookup(ctx context.Context, ip netip.Addr) (Source, bool) {
	if p.Sources == nil || !ip.IsValid() {
		return Source{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	return p.Sources.Lookup(ctx, ip)
}
