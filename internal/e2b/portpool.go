package e2b

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/dataplane/forwardclient"
)

// What the port pool keeps (docs/e2b.md, "Ports of a sandbox").
const (
	// sandboxTTL is how long a Sandbox read for a request to one of its ports answers the next ones: a
	// Sandbox deleted or rebuilt meanwhile has its forwards ended by the data plane anyway.
	sandboxTTL = 2 * time.Second
	// maxPortEntries bounds the kept (caller, Sandbox, port) entries; past it the least recently used goes.
	maxPortEntries = 64
	// portIdle is how long an entry is kept unused.
	portIdle = 90 * time.Second
	// sessionAge is how long a session takes new connections: the API server authorizes a session once, at
	// its start, so a caller whose right to the port was taken away loses it within this time.
	sessionAge = time.Minute
	// idlePerPort bounds the idle keep-alive connections (stream pairs) an entry keeps to its port.
	idlePerPort = 4
)

// portSession is a port-forward session to a Sandbox's container (forwardclient.Session; tests give their own).
type portSession interface {
	Dial(port int) (net.Conn, error)
	Done() <-chan bool
	Close() error
}

// portTarget is what an entry of the pool reaches: one port of one container of one Sandbox (its UID and
// topology generation: a rebuilt Sandbox is another target), for one key.
type portTarget struct {
	key        [32]byte // the caller's key's hash: a session is authorized for the key that opened it
	namespace  string
	sandbox    string
	uid        types.UID
	generation int64
	service    string // "" for the primary
	port       int
}

// portPool keeps, per portTarget, an http.Transport whose connections are stream pairs of one kept
// port-forward session, as kubectl port-forward keeps one session and opens a pair per local connection; and
// the Sandboxes read for a short while. A request to a port then costs no Sandbox read and no new session
// while they are fresh.
type portPool struct {
	open func(ctx context.Context, c *caller, sandbox, service string) (portSession, error)
	now  func() time.Time

	mu        sync.Mutex
	entries   map[portTarget]*portEntry
	sandboxes map[sandboxRead]readSandbox
	services  map[sandboxRead]readServices // serviceports.go
}

type sandboxRead struct {
	key             [32]byte
	namespace, name string
}

type readSandbox struct {
	sbx  *dsv1alpha1.Sandbox
	read time.Time
}

func newPortPool() *portPool {
	return &portPool{open: openPortForward, now: time.Now, entries: map[portTarget]*portEntry{}, sandboxes: map[sandboxRead]readSandbox{},
		services: map[sandboxRead]readServices{},
	}
}

// sandbox reads Sandbox id for c, or answers it from a read of the last sandboxTTL. A Sandbox read with
// another UID or topology generation than the pool's entries ends those, as does one gone.
func (p *portPool) sandbox(ctx context.Context, c *caller, id string) (*dsv1alpha1.Sandbox, error) {
	k := sandboxRead{sha256.Sum256([]byte(c.token)), c.namespace, id}
	now := p.now()
	p.mu.Lock()
	if e, ok := p.sandboxes[k]; ok && now.Sub(e.read) < sandboxTTL {
		p.mu.Unlock()
		return e.sbx, nil
	}
	for rk, e := range p.sandboxes {
		if now.Sub(e.read) >= sandboxTTL {
			delete(p.sandboxes, rk)
		}
	}
	p.mu.Unlock()
	sbx, err := sandboxOf(ctx, c, id)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Code == http.StatusNotFound:
		p.forget(c.namespace, id)
		return nil, err
	case err != nil:
		return nil, err
	}
	p.mu.Lock()
	p.sandboxes[k] = readSandbox{sbx: sbx, read: now}
	p.mu.Unlock()
	p.end(c.namespace, id, func(t portTarget) bool { return t.uid != sbx.UID })
	return sbx, nil
}

// forget ends every entry of Sandbox namespace/name, and forgets its reads: the Sandbox was killed, paused or
// deleted, so nothing of it is kept.
func (p *portPool) forget(namespace, name string) {
	p.mu.Lock()
	for k := range p.sandboxes {
		if k.namespace == namespace && k.name == name {
			delete(p.sandboxes, k)
			delete(p.services, k)
		}
	}
	p.mu.Unlock()
	p.end(namespace, name, func(portTarget) bool { return true })
}

// end closes the entries of Sandbox namespace/name that which picks, with their connections: a Sandbox read
// with another UID replaced the one they reached.
func (p *portPool) end(namespace, name string, which func(portTarget) bool) {
	p.mu.Lock()
	var gone []*portEntry
	for t, e := range p.entries {
		if t.namespace == namespace && t.sandbox == name && which(t) {
			gone = append(gone, e)
			delete(p.entries, t)
		}
	}
	p.mu.Unlock()
	for _, e := range gone {
		e.end()
	}
}

// transport is the kept transport to port of the container (service, "" for the primary) of sbx for c.
func (p *portPool) transport(c *caller, sbx *dsv1alpha1.Sandbox, service string, port int) *http.Transport {
	t := portTarget{
		key: sha256.Sum256([]byte(c.token)), namespace: c.namespace, sandbox: sbx.Name, uid: sbx.UID,
		generation: sbx.Status.TopologyGeneration, service: service, port: port,
	}
	now := p.now()
	p.mu.Lock()
	var gone []*portEntry
	for ot, e := range p.entries {
		stale := ot.namespace == t.namespace && ot.sandbox == t.sandbox && (ot.uid != t.uid || ot.generation != t.generation)
		if stale || now.Sub(e.usedAt()) >= portIdle {
			gone = append(gone, e)
			delete(p.entries, ot)
		}
	}
	e, ok := p.entries[t]
	if !ok {
		if len(p.entries) >= maxPortEntries {
			var oldest portTarget
			var oldestAt time.Time
			for ot, oe := range p.entries {
				if at := oe.usedAt(); oldestAt.IsZero() || at.Before(oldestAt) {
					oldest, oldestAt = ot, at
				}
			}
			gone = append(gone, p.entries[oldest])
			delete(p.entries, oldest)
		}
		e = &portEntry{pool: p, caller: c, target: t}
		e.transport = &http.Transport{
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return e.dial(ctx) },
			MaxIdleConnsPerHost: idlePerPort,
			IdleConnTimeout:     portIdle,
		}
		p.entries[t] = e
	}
	e.touch(now, c)
	p.mu.Unlock()
	e.age(now)
	for _, ge := range gone {
		ge.retire()
	}
	return e.transport
}

// portEntry is the pool's way to one portTarget: a transport over the entry's current session, and the
// sessions it retired, which end when their last connection does.
type portEntry struct {
	pool      *portPool
	target    portTarget
	transport *http.Transport

	mu       sync.Mutex
	caller   *caller // the latest caller of the key, whose clients open the next session
	used     time.Time
	current  *keptSession
	sessions map[*keptSession]struct{} // every session not yet ended, current included
	ended    bool
}

func (e *portEntry) touch(now time.Time, c *caller) {
	e.mu.Lock()
	e.used, e.caller = now, c
	e.mu.Unlock()
}

// age retires the entry's current session once it is older than sessionAge, with the idle connections that
// would keep it in use: the next connection opens a session, which the API server authorizes again.
func (e *portEntry) age(now time.Time) {
	e.mu.Lock()
	k := e.current
	if k == nil || now.Sub(k.opened) < sessionAge {
		e.mu.Unlock()
		return
	}
	e.current = nil
	e.mu.Unlock()
	k.retire()
	e.transport.CloseIdleConnections()
}

func (e *portEntry) usedAt() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.used
}

// dial opens a connection to the entry's port in its current session, opening a session when there is none
// (none yet, the last one ended, or it was retired by age).
func (e *portEntry) dial(ctx context.Context) (net.Conn, error) {
	e.mu.Lock()
	if e.ended {
		e.mu.Unlock()
		return nil, fmt.Errorf("the forward to port %d of sandbox %s ended: the sandbox was deleted or rebuilt", e.target.port, e.target.sandbox)
	}
	k, c := e.current, e.caller
	e.mu.Unlock()
	if k == nil {
		s, err := e.pool.open(ctx, c, e.target.sandbox, e.target.service)
		if err != nil {
			return nil, err
		}
		k = &keptSession{s: s, opened: e.pool.now()}
		e.mu.Lock()
		if e.ended {
			e.mu.Unlock()
			_ = s.Close()
			return nil, fmt.Errorf("the forward to port %d of sandbox %s ended: the sandbox was deleted or rebuilt", e.target.port, e.target.sandbox)
		}
		if e.current != nil { // another dial opened one meanwhile: this one serves this connection only
			k.retired = true
		} else {
			e.current = k
		}
		if e.sessions == nil {
			e.sessions = map[*keptSession]struct{}{}
		}
		e.sessions[k] = struct{}{}
		e.mu.Unlock()
		go e.watch(k)
	}
	return k.dial(e.target.port)
}

// watch drops session k from the entry once it ended (the server cut it when its container went, or it was
// closed), and the idle connections of the entry with it.
func (e *portEntry) watch(k *keptSession) {
	<-k.s.Done()
	e.mu.Lock()
	delete(e.sessions, k)
	if e.current == k {
		e.current = nil
	}
	e.mu.Unlock()
	e.transport.CloseIdleConnections()
}

// close takes no new connection into the entry, closes its idle ones and returns its sessions, for retire and
// end to let go of each in their own way.
func (e *portEntry) close() []*keptSession {
	e.mu.Lock()
	e.ended = true
	ks := make([]*keptSession, 0, len(e.sessions))
	for k := range e.sessions {
		ks = append(ks, k)
	}
	e.mu.Unlock()
	e.transport.CloseIdleConnections()
	return ks
}

// retire lets the entry's sessions end with their last connection, and takes no new connection: the entry
// was evicted or idle.
func (e *portEntry) retire() {
	ks := e.close()
	for _, k := range ks {
		k.retire()
	}
}

// end closes every session of the entry at once, with their connections: its Sandbox is gone.
func (e *portEntry) end() {
	ks := e.close()
	for _, k := range ks {
		_ = k.s.Close()
	}
}

// keptSession is a session and its open connections: a retired one closes when the last of them does.
type keptSession struct {
	s      portSession
	opened time.Time

	mu      sync.Mutex
	conns   int
	retired bool
}

func (k *keptSession) dial(port int) (net.Conn, error) {
	k.mu.Lock()
	k.conns++
	k.mu.Unlock()
	conn, err := k.s.Dial(port)
	if err != nil {
		k.release()
		return nil, fmt.Errorf("port %d: %w", port, err)
	}
	return &sessionConn{Conn: conn, k: k}, nil
}

func (k *keptSession) release() {
	k.mu.Lock()
	k.conns--
	closeNow := k.retired && k.conns == 0
	k.mu.Unlock()
	if closeNow {
		_ = k.s.Close()
	}
}

func (k *keptSession) retire() {
	k.mu.Lock()
	k.retired = true
	closeNow := k.conns == 0
	k.mu.Unlock()
	if closeNow {
		_ = k.s.Close()
	}
}

// sessionConn is a connection of a kept session: its Close releases it from the session.
type sessionConn struct {
	net.Conn
	k    *keptSession
	once sync.Once
}

func (c *sessionConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.k.release)
	return err //nolint:wrapcheck // the stream's own error
}

// openPortForward opens a port-forward session to the Sandbox's primary, or to its instance of service,
// with the caller's key (the data plane's portforward subresource, as kubectl dockside port-forward dials it).
func openPortForward(ctx context.Context, c *caller, sandbox, service string) (portSession, error) {
	p, err := newSandboxPlane(c, sandbox)
	if err != nil {
		return nil, err
	}
	u := p.base.JoinPath("portforward")
	if service != "" {
		u.RawQuery = "service=" + service
	}
	d, err := forwardclient.Dialer(c.config, u, true)
	if err != nil {
		return nil, fmt.Errorf("dialing the port-forward of sandbox %s: %w", sandbox, err)
	}
	s, err := forwardclient.Open(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", sandbox, err)
	}
	return s, nil
}
