package egress

import (
	"fmt"
	"net/netip"
	"slices"
)

// Policy decides addresses AFTER resolution (and IP literals as they are): it is what keeps an allowed name
// from leading to the host, the cloud metadata address, a private network or another Sandbox.
type Policy struct {
	// Permit are operator ranges (agent flag --egress-permit): they override the forbidden ranges and the
	// host's addresses.
	Permit []netip.Prefix
	// Never are Dockside's own sandbox subnets: refused even when inside Permit.
	Never []netip.Prefix
	// HostAddrs returns the addresses of the Docker host itself, refused unless inside Permit; nil = none. It is
	// called for every address judged, so it should answer from memory.
	HostAddrs func() []netip.Addr
	// AllowIPv6 lets public IPv6 addresses through (agent flag --egress-ipv6). Without it every IPv6
	// address is refused but those inside Permit and those that embed a permitted IPv4 address.
	AllowIPv6 bool
}

// Check returns nil when addr may be dialled, else a *Refusal (ReasonForbiddenAddress) naming the address's
// class. IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) are judged by the
// IPv4 address they embed, so ::ffff:169.254.169.254 is refused like 169.254.169.254.
func (p Policy) Check(addr netip.Addr) error {
	if class, refused := p.judge(addr); refused {
		return &Refusal{Reason: ReasonForbiddenAddress, Message: fmt.Sprintf("%s is %s", addr, class)}
	}
	return nil
}

// judge is Check's decision with the phrase naming why an address is refused, which the proxy also uses after
// a lookup ("resolves to 169.254.169.254, a link-local address").
func (p Policy) judge(addr netip.Addr) (class string, refused bool) {
	if !addr.IsValid() {
		return "not a valid address", true
	}
	// A zone names an interface, not another destination; prefixes never contain a zoned address.
	a := addr.WithZone("").Unmap()
	inner, form := embedded(a)
	self := append([]netip.Addr{a}, inner...)
	if anyIn(p.Never, self) {
		return "an address of a Dockside sandbox network", true
	}
	if anyIn(p.Permit, []netip.Addr{a}) || (len(inner) > 0 && allIn(p.Permit, inner)) {
		return "", false
	}
	if c := forbiddenClass(a); c != "" {
		return c, true
	}
	if c := embeddedClass(inner, form); c != "" {
		return c, true
	}
	if p.HostAddrs != nil {
		for _, h := range p.HostAddrs() {
			if slices.Contains(self, h.WithZone("").Unmap()) {
				return "an address of the Docker host", true
			}
		}
	}
	// Sandboxes have no IPv6 of their own (docs/egress.md), and a node's IPv6 routes are seldom watched as
	// closely as its IPv4 ones: the proxy reaches IPv6 only where the operator says so.
	if a.Is6() && !p.AllowIPv6 {
		return "an IPv6 address, which the egress proxy reaches only where the agent runs with --egress-ipv6", true
	}
	return "", false
}

func anyIn(prefixes []netip.Prefix, addrs []netip.Addr) bool {
	for _, a := range addrs {
		for _, p := range prefixes {
			if p.Contains(a) {
				return true
			}
		}
	}
	return false
}

func allIn(prefixes []netip.Prefix, addrs []netip.Addr) bool {
	for _, a := range addrs {
		if !anyIn(prefixes, []netip.Addr{a}) {
			return false
		}
	}
	return true
}
