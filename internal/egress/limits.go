package egress

import (
	"fmt"
	"net/netip"
)

// Defaults of Proxy.MaxConns and Proxy.MaxConnsPerSource.
const (
	DefaultMaxConns          = 1024
	DefaultMaxConnsPerSource = 64
)

// maxOverLimit bounds the connections over a limit that are being answered at once (each answer reads the
// request for at most overLimitTimeout, so that the client sees the 503 rather than a reset); connections
// beyond it are closed unanswered, so that a flood costs the agent neither goroutines nor descriptors.
const maxOverLimit = 64

// limits counts the proxy's connections, in all and per source address. Guarded by its session's mutex.
type limits struct {
	max, perSource int
	total          int
	bySource       map[netip.Addr]int
	overLimit      int // connections over a limit being answered
}

func newLimits(max, perSource int) limits {
	if max <= 0 {
		max = DefaultMaxConns
	}
	if perSource <= 0 {
		perSource = DefaultMaxConnsPerSource
	}
	return limits{max: max, perSource: perSource, bySource: map[netip.Addr]int{}}
}

// take reserves a connection for ip: "" when it got one, else which limit it is over.
func (l *limits) take(ip netip.Addr) string {
	if l.total >= l.max {
		return fmt.Sprintf("the egress proxy already has %d connections open, its limit", l.max)
	}
	if l.bySource[ip] >= l.perSource {
		return fmt.Sprintf("%s already has %d connections open through the egress proxy, the limit per source", ip, l.perSource)
	}
	l.total++
	l.bySource[ip]++
	return ""
}

// give returns what take reserved.
func (l *limits) give(ip netip.Addr) {
	l.total--
	if l.bySource[ip]--; l.bySource[ip] <= 0 {
		delete(l.bySource, ip)
	}
}
