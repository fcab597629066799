package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// The public stand-ins are documentation addresses (203.0.113.7, 2001:db8::7): the policy treats those ranges
// as public, and nothing here dials anything.
func TestPolicyCheck(t *testing.T) {
	host := netip.MustParseAddr("198.51.100.20")
	base := Policy{HostAddrs: func() []netip.Addr { return []netip.Addr{host, netip.MustParseAddr("2001:db8::20")} }}
	permit10 := base
	permit10.Permit = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("198.51.100.20/32")}
	neverBeatsPermit := permit10
	neverBeatsPermit.Never = []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}
	v6 := base
	v6.AllowIPv6 = true

	for _, tc := range []struct {
		policy Policy
		addr   string
		class  string // "" = allowed
	}{
		{base, "169.254.169.254", "a link-local address"},
		{base, "::ffff:169.254.169.254", "a link-local address"},
		{base, "64:ff9b::a9fe:a9fe", "a NAT64 form of 169.254.169.254, a link-local address"},
		{base, "::a9fe:a9fe", "an IPv4-compatible form of 169.254.169.254, a link-local address"},
		{base, "2002:a9fe:a9fe::1", "a 6to4 form of 169.254.169.254, a link-local address"},
		{base, "2001:0:cb00:7107::5601:5601", "a Teredo form of 169.254.169.254, a link-local address"},
		{base, "64:ff9b:1::a9fe:a9fe", "a local-use NAT64 address"},
		{base, "fe80::1", "a link-local address"},
		{base, "fe80::1%eth0", "a link-local address"},
		{base, "10.1.2.3", "a private address (RFC 1918)"},
		{base, "172.20.0.1", "a private address (RFC 1918)"},
		{base, "192.168.1.1", "a private address (RFC 1918)"},
		{base, "100.64.0.1", "a shared address"},
		{base, "192.0.0.8", "an IETF protocol address"},
		{base, "198.18.0.1", "a benchmarking address"},
		{base, "127.0.0.1", "a loopback address"},
		{base, "::1", "a loopback address"},
		{base, "fd00::1", "a unique local address"},
		{base, "fec0::1", "a site-local address"},
		{base, "0.0.0.0", "an unspecified address"},
		{base, "::", "an unspecified address"},
		{base, "224.0.0.1", "a multicast address"},
		{base, "ff02::1", "a multicast address"},
		{base, "255.255.255.255", "the broadcast address"},
		{base, "240.0.0.1", "a reserved address"},
		{base, "198.51.100.20", "an address of the Docker host"},
		{base, "2001:db8::20", "an address of the Docker host"},
		{v6, "2001:db8::20", "an address of the Docker host"},
		{v6, "fe80::1", "a link-local address"},
		{v6, "64:ff9b::a9fe:a9fe", "a NAT64 form of 169.254.169.254"},
		{base, "::ffff:198.51.100.20", "an address of the Docker host"},
		{base, "203.0.113.7", ""},
		{base, "2001:db8::7", "an IPv6 address, which the egress proxy reaches only where the agent runs with --egress-ipv6"},
		{v6, "2001:db8::7", ""},
		{base, "::ffff:203.0.113.7", ""},                // IPv4-mapped: dialled as IPv4
		{base, "64:ff9b::cb00:7107", "an IPv6 address"}, // NAT64 of 203.0.113.7: dialled as IPv6
		{v6, "64:ff9b::cb00:7107", ""},
		{Policy{}, "198.51.100.20", ""}, // no HostAddrs: no host address
		{permit10, "10.1.2.3", ""},
		{permit10, "::ffff:10.1.2.3", ""},
		{permit10, "64:ff9b::a01:203", ""},            // NAT64 of 10.1.2.3, judged as 10.1.2.3
		{permit10, "198.51.100.20", ""},               // the host, permitted
		{permit10, "172.20.0.1", "a private address"}, // outside Permit
		{neverBeatsPermit, "10.200.0.5", "an address of a Dockside sandbox network"},
		{neverBeatsPermit, "::ffff:10.200.0.5", "an address of a Dockside sandbox network"},
		{neverBeatsPermit, "64:ff9b::ac8:5", "an address of a Dockside sandbox network"}, // NAT64 of 10.200.0.5
		{neverBeatsPermit, "10.1.2.3", ""},
		{base, "", "not a valid address"},
	} {
		var addr netip.Addr
		if tc.addr != "" {
			addr = netip.MustParseAddr(tc.addr)
		}
		err := tc.policy.Check(addr)
		if tc.class == "" {
			if err != nil {
				t.Errorf("Check(%s) = %v, want allowed", tc.addr, err)
			}
			continue
		}
		r, ok := errors.AsType[*Refusal](err)
		if !ok {
			t.Errorf("Check(%s) = %v, want a refusal naming %q", tc.addr, err, tc.class)
			continue
		}
		if r.Reason != ReasonForbiddenAddress || !strings.Contains(r.Message, tc.class) {
			t.Errorf("Check(%s) = %s / %q, want %s naming %q", tc.addr, r.Reason, r.Message, ReasonForbiddenAddress, tc.class)
		}
	}
}

func TestCheckMessageNamesTheAddress(t *testing.T) {
	err := Policy{}.Check(netip.MustParseAddr("169.254.169.254"))
	if err == nil || err.Error() != "ForbiddenAddress: 169.254.169.254 is a link-local address" {
		t.Fatalf("got %v", err)
	}
}
