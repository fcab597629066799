package runtimes

import "sync"

// Live is a node's runtimes as its agent last read them from its Docker: the agent reads the daemon again
// every so often and when its event stream reconnects, so that runsc registered or removed in daemon.json
// and a reload of Docker are seen without restarting the agent. The reconcilers read it on each pass, the
// Lease's annotation follows it. A Node is never changed once made; Set swaps it whole.
type Live struct {
	mu      sync.Mutex
	node    Node
	changed chan struct{} // closed, and replaced, when Set changes what the node offers
}

// NewLive starts from the node's runtimes as read at the agent's start.
func NewLive(n Node) *Live { return &Live{node: n, changed: make(chan struct{})} }

// Node is what the node offers now; the zero Node (runc alone) on a nil Live, as reconcilers built without
// a driver's list see it.
func (l *Live) Node() Node {
	n, _ := l.Current()
	return n
}

// Current is what the node offers now, and a channel closed when that changes.
func (l *Live) Current() (Node, <-chan struct{}) {
	if l == nil {
		return Node{}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node, l.changed
}

// Set makes n what the node offers, telling whether that changed (the default and Docker's name for gVisor
// are the agent's flags: they do not change).
func (l *Live) Set(n Node) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n.AnnotationValue() == l.node.AnnotationValue() {
		return false
	}
	l.node = n
	close(l.changed)
	l.changed = make(chan struct{})
	return true
}
