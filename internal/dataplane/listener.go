package dataplane

import (
	"crypto/x509"
	"errors"
	"log"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Limits bound what the data plane's listener holds open for anyone who reaches its port
// (docs/security.md, "The data plane's listener"). Zero fields take the defaults.
type Limits struct {
	// HeaderTimeout bounds the TLS handshake and the reading of a request's headers: a connection that has
	// not shown a certificate and sent its headers by then is closed.
	HeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that waits this long for its next request. Streams (exec,
	// port-forward, followed output) are not idle: they hold their request, or took the connection over.
	IdleTimeout time.Duration
	// MaxConnections is how many connections are open at once; one more is closed as soon as it is accepted.
	MaxConnections int
	// MaxConnectionsPerSource is how many of them one IP address holds. Every call through the API server
	// comes from one of its addresses, and every forwarded one from a peer agent's.
	MaxConnectionsPerSource int
}

// Defaults of Limits. An idle TLS connection costs the agent about 35 KiB and a stream more: 1024 of them
// stay well inside a DaemonSet's 256Mi (docs/security.md). The idle timeout is longer than the 90 s after
// which kube-apiserver's transport drops an idle connection, so that the client closes first and never
// sends a request on a connection the agent is closing.
const (
	DefaultHeaderTimeout           = 10 * time.Second
	DefaultIdleTimeout             = 2 * time.Minute
	DefaultMaxConnections          = 1024
	DefaultMaxConnectionsPerSource = 512
)

func (l Limits) withDefaults() Limits {
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.MaxConnectionsPerSource <= 0 {
		l.MaxConnectionsPerSource = DefaultMaxConnectionsPerSource
	}
	return l
}

// limitListener closes, as soon as it accepts it, a connection past the total or its source's cap, so that
// no one can hold more of the agent than the caps allow; the ones it hands out count until closed.
type limitListener struct {
	net.Listener
	max, perSource int
	log            logr.Logger

	mu       sync.Mutex
	open     int
	bySource map[string]int
}

func newLimitListener(ln net.Listener, l Limits, log logr.Logger) *limitListener {
	return &limitListener{Listener: ln, max: l.MaxConnections, perSource: l.MaxConnectionsPerSource, log: log, bySource: map[string]int{}}
}

// Accept returns the next connection within the caps.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err //nolint:wrapcheck // net/http's Serve tells a temporary error by its type
		}
		source := sourceOf(c.RemoteAddr())
		if why := l.admit(source); why != "" {
			_ = c.Close()
			l.log.V(1).Info("Refused a connection", "source", source, "reason", why)
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.release(source) }}, nil
	}
}

func (l *limitListener) admit(source string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open >= l.max:
		return "the listener's connection cap"
	case l.bySource[source] >= l.perSource:
		return "the cap per source address"
	}
	l.open++
	l.bySource[source]++
	return ""
}

func (l *limitListener) release(source string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.bySource[source]--; l.bySource[source] <= 0 {
		delete(l.bySource, source)
	}
}

// sourceOf is the IP address a connection comes from.
func sourceOf(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// limitedConn gives its place back once, at its first Close (a hijacked stream's included).
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close() //nolint:wrapcheck // a net.Conn's own error
}

var errUntrustedClient = errors.New("the data plane serves only the API server's front proxy and peer agents: show a client certificate of either")

// trustedClient is the TLS handshake's check: a connection goes on only with a client certificate that
// chains, for client use, to the front proxy's CA or to the agents' CA. Which of the two it is, and the front
// proxy's allowed names, are each request's to check (authenticate); a connection without either is closed
// at the handshake, before it holds a request's worth of memory.
func (s *Server) trustedClient(rawCerts [][]byte, _ [][]*x509.Certificate) error {
	if len(rawCerts) == 0 {
		return errUntrustedClient
	}
	leaf, err := x509.ParseCertificate(rawCerts[0])
	if err != nil {
		return errUntrustedClient
	}
	inter := x509.NewCertPool()
	for _, raw := range rawCerts[1:] {
		if c, err := x509.ParseCertificate(raw); err == nil {
			inter.AddCert(c)
		}
	}
	var roots []*x509.CertPool
	if agents, ok := s.certs.agents(); ok {
		roots = append(roots, agents.Roots)
	}
	if fp := s.proxy.Load(); fp != nil {
		roots = append(roots, fp.verify.Roots)
	}
	for _, pool := range roots {
		opts := x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		if _, err := leaf.Verify(opts); err == nil {
			return nil
		}
	}
	return errUntrustedClient
}

// httpErrorLog passes net/http's complaints on to the agent's log but for failed handshakes, which anyone
// who reaches the port can cause at will (debug level only).
func httpErrorLog(l logr.Logger) *log.Logger {
	return log.New(errorLogWriter{l}, "", 0)
}

type errorLogWriter struct{ log logr.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if strings.Contains(msg, "TLS handshake error") {
		w.log.V(1).Info("Refused a connection", "reason", msg)
	} else {
		w.log.Info("The HTTP server", "message", msg)
	}
	return len(p), nil
}
