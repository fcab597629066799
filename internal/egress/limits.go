package egress

import (
	"fmt"
	"net/netip"
)

// Defaults of Proxy.MaxConns and Proxy.MaxConnsPerSandbox. A Sandbox's containers (its primary and every
// service) share its limit; the node's limit only bounds the agent's descriptors and goroutines, and is
// reached only when 16 Sandboxes hold their whole share (docs/egress.md, "Limits and timeouts").
const (
	DefaultMaxConns           = 1024
	DefaultMaxConnsPerSandbox = 64
)

// maxOverLimit bounds the connections over a limit that are being answered at once (each answer reads the
// request for at most overLimitTimeout, so that the client sees the 503 rather than a reset); connections
// beyond it are closed unanswered, so that a flood costs the agent neither goroutines nor descriptors.
const maxOverLimit = 64

// limits counts the proxy's connections, in all and per Sandbox (a source that is no Sandbox of the node
// counts as one of its own, by address). Guarded by its session's mutex.
type limits struct {
	max, perSandbox int
	total           int
	bySandbox       map[sourceKey]int
	overLimit       int // connections over a limit being answered
}

// sourceKey is whom a connection is charged to: its Sandbox, or its address when it is none.
type sourceKey struct {
	namespace, name string
	ip              netip.Addr // only when the source is no Sandbox of the node
}

func keyOf(src Source, known bool, ip netip.Addr) sourceKey {
	if known {
		return sourceKey{namespace: src.Namespace, name: src.Name}
	}
	return sourceKey{ip: ip}
}

func (k sourceKey) String() string {
	if k.name != "" {
		return "Sandbox " + k.namespace + "/" + k.name
	}
	return k.ip.String()
}

func newLimits(max, perSandbox int) limits {
	if max <= 0 {
		max = DefaultMaxConns
	}
	if perSandbox <= 0 {
		perSandbox = DefaultMaxConnsPerSandbox
	}
	return limits{max: max, perSandbox: perSandbox, bySandbox: map[sourceKey]int{}}
}

// takeNode reserves one of the node's connections: "" when it got one, else why not.
func (l *limits) takeNode() string {
	if l.total >= l.max {
		return fmt.Sprintf("the egress proxy already has %d connections open, its limit", l.max)
	}
	l.total++
	return ""
}

// giveNode returns what takeNode reserved.
func (l *limits) giveNode() { l.total-- }

// take reserves one of k's connections: "" when it got one, else why not.
func (l *limits) take(k sourceKey) string {
	if l.bySandbox[k] >= l.perSandbox {
		return fmt.Sprintf("%s already has %d connections open through the egress proxy, its limit", k, l.perSandbox)
	}
	l.bySandbox[k]++
	return ""
}

// give returns what take reserved.
func (l *limits) give(k sourceKey) {
	if l.bySandbox[k]--; l.bySandbox[k] <= 0 {
		delete(l.bySandbox, k)
	}
}
