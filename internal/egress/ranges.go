package egress

import (
	"fmt"
	"net/netip"
)

// addrClass is a range of addresses no Sandbox may reach unless the operator permits it, with the phrase that
// names it in a refusal ("169.254.169.254 is a link-local address").
type addrClass struct {
	prefix netip.Prefix
	name   string
}

func class(prefix, name string) addrClass {
	return addrClass{prefix: netip.MustParsePrefix(prefix), name: name}
}

// forbidden are the ranges refused by default: everything that is not public unicast. The documentation
// ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) are deliberately absent: they route
// nowhere, so treating them as public costs nothing, and the tests use them as public addresses that are never
// dialled. Order matters only where ranges nest (the broadcast address before 240.0.0.0/4).
var forbidden = []addrClass{
	class("0.0.0.0/8", "an unspecified address (0.0.0.0/8)"),
	class("127.0.0.0/8", "a loopback address"),
	class("169.254.0.0/16", "a link-local address"),
	class("10.0.0.0/8", "a private address (RFC 1918)"),
	class("172.16.0.0/12", "a private address (RFC 1918)"),
	class("192.168.0.0/16", "a private address (RFC 1918)"),
	class("100.64.0.0/10", "a shared address (100.64.0.0/10, carrier-grade NAT)"),
	class("192.0.0.0/24", "an IETF protocol address (192.0.0.0/24)"),
	class("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)"),
	class("224.0.0.0/4", "a multicast address"),
	class("255.255.255.255/32", "the broadcast address"),
	class("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),
	class("::/128", "an unspecified address"),
	class("::1/128", "a loopback address"),
	class("fe80::/10", "a link-local address"),
	class("fec0::/10", "a site-local address (fec0::/10)"),
	class("fc00::/7", "a unique local address (fc00::/7)"),
	class("ff00::/8", "a multicast address"),
	// Local-use NAT64 prefixes may place the IPv4 address anywhere in the address, so none is trusted.
	class("64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)"),
}

// forbiddenClass names the forbidden range addr is in, or "" when it is in none.
func forbiddenClass(addr netip.Addr) string {
	for _, c := range forbidden {
		if c.prefix.Contains(addr) {
			return c.name
		}
	}
	return ""
}

// embedding is an IPv6 form that carries an IPv4 address and reaches it: such an address is judged by the IPv4
// address it embeds, so that no IPv6 spelling of 169.254.169.254 slips through.
type embedding struct {
	prefix  netip.Prefix
	form    string
	extract func(b [16]byte) []netip.Addr
}

func v4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b)) }

// embeddings: IPv4-mapped addresses never get here (Unmap first); "::" and "::1" are judged as IPv6 before these.
var embeddings = []embedding{
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible form of",
		func(b [16]byte) []netip.Addr { return []netip.Addr{v4(b[12:])} }},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 form of",
		func(b [16]byte) []netip.Addr { return []netip.Addr{v4(b[12:])} }},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 form of",
		func(b [16]byte) []netip.Addr { return []netip.Addr{v4(b[2:6])} }},
	// Teredo: the server's address in bits 32-63, the client's (where the traffic goes) inverted in the last 32.
	{netip.MustParsePrefix("2001::/32"), "a Teredo form of",
		func(b [16]byte) []netip.Addr {
			client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
			return []netip.Addr{netip.AddrFrom4(client), v4(b[4:8])}
		}},
}

// embedded returns the IPv4 addresses an IPv6 address carries and the name of its form; none for IPv4.
func embedded(addr netip.Addr) ([]netip.Addr, string) {
	if !addr.Is6() {
		return nil, ""
	}
	for _, e := range embeddings {
		if e.prefix.Contains(addr) {
			return e.extract(addr.As16()), e.form
		}
	}
	return nil, ""
}

// embeddedClass names the first forbidden IPv4 address among those addr embeds, e.g. "a NAT64 form of
// 169.254.169.254, a link-local address", or "".
func embeddedClass(inner []netip.Addr, form string) string {
	for _, a := range inner {
		if c := forbiddenClass(a); c != "" {
			return fmt.Sprintf("%s %s, %s", form, a, c)
		}
	}
	return ""
}
