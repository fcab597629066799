package egress

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// hostAddrs are the addresses of the host's interfaces: the proxy runs in the host's network namespace, so
// a connection to any of them would reach the host itself. The policy asks for every address it judges, so
// they are read again only every so often (a bridge made since is private anyway, and refused as such).
type hostAddrs struct {
	every time.Duration

	mu    sync.Mutex
	at    time.Time
	addrs []netip.Addr
}

func (h *hostAddrs) get() []netip.Addr {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.at) < h.every {
		return h.addrs
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return h.addrs // the last known set: failing open here would let the host be reached
	}
	h.addrs, h.at = h.addrs[:0:0], time.Now()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			h.addrs = append(h.addrs, p.Addr())
		}
	}
	return h.addrs
}

// HostAddrs is Policy.HostAddrs for a proxy in the host's network namespace: the addresses of the host's
// interfaces, read again at most every period.
func HostAddrs(every time.Duration) func() []netip.Addr { return (&hostAddrs{every: every}).get }
