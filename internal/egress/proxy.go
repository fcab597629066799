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
	OnRefused          func(src Source, known bool, dest string, r *Refusal)
	MaxConns           int // whole proxy, default DefaultMaxConns
	MaxConnsPerSandbox int // per Sandbox, all its containers together, default DefaultMaxConnsPerSandbox
	// IdleTimeout ends a tunnel or a forwarded request through which nothing moved, either way, for that
	// long; MaxDuration ends it that long after the request was read, whatever moves (docs/egress.md).
	// 0: DefaultIdleTimeout and DefaultMaxDuration.
	IdleTimeout, MaxDuration time.Duration
	Log                      logr.Logger

	headerTimeout time.Duration // tests only; 0: the 10 s default

	mu  sync.Mutex
	cur *session
}

// admit takes an accepted connection. Within the node's limit it is charged to its Sandbox (found from
// memory when it can be, see sourceCache) and served within that Sandbox's limit; over either it is answered
// TooManyConnections (or, when too many such answers are under way, closed at once).
func (p *Proxy) admit(s *session, c net.Conn) {
	ip := sourceIP(c)
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		_ = c.Close()
		return
	}
	over := s.limits.takeNode()
	if !s.answerOverLimit(over) {
		s.mu.Unlock()
		_ = c.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()

	go func() {
		defer s.wg.Done()
		defer s.untrack(c)
		if over != "" {
			defer s.overLimitAnswered()
			src, known, _ := p.who(s, ip)
			p.refuseOverLimit(c, src, known, over)
			return
		}
		defer func() {
			s.mu.Lock()
			s.limits.giveNode()
			s.mu.Unlock()
		}()
		src, known, fresh := p.who(s, ip)
		k := keyOf(src, known, ip)
		s.mu.Lock()
		over := s.limits.take(k)
		answer := s.answerOverLimit(over)
		s.mu.Unlock()
		switch {
		case over == "":
			defer func() {
				s.mu.Lock()
				s.limits.give(k)
				s.mu.Unlock()
			}()
			p.serveConn(s, c, ip, src, known, fresh)
		case answer:
			defer s.overLimitAnswered()
			p.refuseOverLimit(c, src, known, over)
		}
	}()
}

// who is the source at ip: from the session's cache when it was looked up within sourceTTL (fresh false),
// else from Sources (fresh true), remembered.
func (p *Proxy) who(s *session, ip netip.Addr) (src Source, known, fresh bool) {
	now := time.Now()
	if src, known, ok := s.sources.get(ip, now); ok {
		return src, known, false
	}
	src, known = p.lookup(s.ctx, ip)
	s.sources.put(ip, src, known, now)
	return src, known, true
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
