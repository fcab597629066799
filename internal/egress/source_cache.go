package egress

import (
	"net/netip"
	"sync"
	"time"
)

// sourceTTL is how long the proxy charges an address's connections to the Sandbox it was last found to be,
// without asking Sources again.
const sourceTTL = 5 * time.Second

// sourceCache remembers whom each address was found to be, so that charging a connection to its Sandbox's
// limit costs no Docker call: a Sandbox flooding the proxy is turned away from memory. It only ever decides
// whom a connection is charged to; whether a request may pass is judged on a fresh lookup (serveConn).
type sourceCache struct {
	mu sync.Mutex
	m  map[netip.Addr]cachedSource
}

type cachedSource struct {
	src   Source
	known bool
	at    time.Time
}

// maxCachedSources bounds the cache: beyond it, entries past their TTL are dropped at the next put.
const maxCachedSources = 4096

func (c *sourceCache) get(ip netip.Addr, now time.Time) (Source, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[ip]
	if !ok || now.Sub(e.at) > sourceTTL {
		return Source{}, false, false
	}
	return e.src, e.known, true
}

func (c *sourceCache) put(ip netip.Addr, src Source, known bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[netip.Addr]cachedSource{}
	}
	if len(c.m) >= maxCachedSources {
		for a, e := range c.m {
			if now.Sub(e.at) > sourceTTL {
				delete(c.m, a)
			}
		}
	}
	c.m[ip] = cachedSource{src: src, known: known, at: now}
}
