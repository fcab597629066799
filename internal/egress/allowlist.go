package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Allowlist is a Sandbox's spec.network.allow: entries "host", "host:port", "*.suffix", "*.suffix:port"; host
// may be a DNS name (lowercase) or an IPv4 literal. "*.example.com" matches any name ending in ".example.com"
// (not example.com itself). No port = any port. The zero Allowlist (no entries) permits every destination the
// Policy permits (mode Isolated without a list = "the public internet").
type Allowlist struct {
	entries []allowEntry
}

// allowEntry is one parsed entry: a name, a suffix (".example.com" for "*.example.com") or an IPv4 address.
type allowEntry struct {
	name   string
	suffix string
	ip     netip.Addr
	port   int // 0: any port
}

// ParseAllowlist parses spec.network.allow; an error names the first bad entry, its index and what is wrong.
func ParseAllowlist(entries []string) (Allowlist, error) {
	var a Allowlist
	for i, s := range entries {
		e, problem := parseEntry(s)
		if problem != "" {
			return Allowlist{}, fmt.Errorf("network.allow[%d] %q: %s", i, s, problem)
		}
		a.entries = append(a.entries, e)
	}
	return a, nil
}

// parseEntry parses one entry, or says what is wrong with it. Entries have one spelling (lowercase, no
// trailing dot) so that what the API shows is what is matched.
func parseEntry(s string) (allowEntry, string) {
	var e allowEntry
	if s == "" {
		return e, "empty entry"
	}
	if strings.Contains(s, "/") {
		return e, "an entry is host or host:port, without a scheme or a path"
	}
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") > 1 {
		return e, "IPv6 addresses are not supported; use a DNS name or an IPv4 address"
	}
	host := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		port, ok := parsePort(s[i+1:])
		if !ok {
			return e, "the port must be a number from 1 to 65535"
		}
		host, e.port = s[:i], port
	}
	if host != strings.ToLower(host) {
		return e, "host names are written in lowercase"
	}
	rest, wildcard := strings.CutPrefix(host, "*.")
	if strings.Contains(rest, "*") || host == "*" {
		return e, "a wildcard is written only as a leading '*.', as in *.example.com"
	}
	if rest != "" && strings.HasSuffix(rest, ".") {
		return e, "write the name without a trailing dot"
	}
	if wildcard {
		if _, err := netip.ParseAddr(rest); err == nil {
			return e, "a wildcard takes a DNS name suffix, not an address"
		}
		if p := nameProblem(rest); p != "" {
			return e, "after '*.': " + p
		}
		e.suffix = "." + rest
		return e, ""
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		e.ip = ip // no colon got here, so it is IPv4
		return e, ""
	}
	if p := nameProblem(host); p != "" {
		return e, p
	}
	e.name = host
	return e, ""
}

// parsePort accepts the decimal numbers 1 to 65535, without sign or leading zero.
func parsePort(s string) (int, bool) {
	if s == "" || s[0] == '0' || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n <= 65535
}

// Empty reports whether the list has no entries, and so permits every destination the Policy permits.
func (a Allowlist) Empty() bool { return len(a.entries) == 0 }

// Permits reports whether the list allows host:port, with host as the client asked for it (a name or an IP
// literal), case-insensitive and with a trailing dot ignored. Names never match address entries nor the
// reverse: the list is judged before any lookup, and the Policy judges what a name resolves to.
func (a Allowlist) Permits(host string, port int) bool {
	if a.Empty() {
		return true
	}
	name := normalName(host)
	ip, err := netip.ParseAddr(name)
	isIP := err == nil
	if isIP {
		ip = ip.Unmap()
	}
	for _, e := range a.entries {
		if e.port != 0 && e.port != port {
			continue
		}
		switch {
		case isIP && e.ip.IsValid() && e.ip == ip:
			return true
		case !isIP && e.name != "" && e.name == name:
			return true
		case !isIP && e.suffix != "" && len(name) > len(e.suffix) && strings.HasSuffix(name, e.suffix):
			return true
		}
	}
	return false
}
