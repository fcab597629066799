package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Bounds of one decision.
const (
	resolveTimeout = 5 * time.Second
	dialTimeout    = 10 * time.Second
	lookupTimeout  = 5 * time.Second // Sources.Lookup
)

// decide takes a parsed destination through the rule's steps, in this order: the source's allowlist on the
// name as asked (so a name not on the list never causes a DNS query), then resolution (IP literals skip it),
// then the Policy on every address. It returns the permitted addresses in resolver order.
func (p *Proxy) decide(ctx context.Context, src Source, t target) ([]netip.Addr, *Refusal) {
	if !src.Allow.Permits(t.host, t.port) {
		return nil, &Refusal{Reason: ReasonNotAllowed, Message: "not on this Sandbox's network.allow list"}
	}
	if t.ip.IsValid() {
		if class, refused := p.Policy.judge(t.ip); refused {
			return nil, &Refusal{Reason: ReasonForbiddenAddress, Message: fmt.Sprintf("%s is %s", t.ip, class)}
		}
		return []netip.Addr{t.ip}, nil
	}
	addrs, r := p.resolve(ctx, t.host)
	if r != nil {
		return nil, r
	}
	var permitted []netip.Addr
	var firstRefused, firstClass string
	for _, a := range addrs {
		a = a.WithZone("").Unmap() // what is judged is what is dialled
		if class, refused := p.Policy.judge(a); refused {
			if firstRefused == "" {
				firstRefused, firstClass = a.String(), class
			}
			continue
		}
		permitted = append(permitted, a)
	}
	if len(permitted) == 0 {
		msg := fmt.Sprintf("resolves to %s, %s", firstRefused, firstClass)
		if len(addrs) > 1 {
			msg += fmt.Sprintf(" (and %d more addresses, none permitted)", len(addrs)-1)
		}
		return nil, &Refusal{Reason: ReasonForbiddenAddress, Message: msg}
	}
	return permitted, nil
}

// resolve looks name up within resolveTimeout, as an absolute name (with a trailing dot), so that the host's
// search domains (a cluster's ndots:5 with svc.cluster.local and the like) are never tried before the name
// itself: what the allowlist judged is what is resolved. A failure names the name and the resolver's verdict,
// not the resolver's own address.
func (p *Proxy) resolve(ctx context.Context, name string) ([]netip.Addr, *Refusal) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	var resolver Resolver = net.DefaultResolver
	if p.Resolver != nil {
		resolver = p.Resolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", name+".")
	if err != nil {
		why := err.Error()
		if dnsErr, ok := errors.AsType[*net.DNSError](err); ok {
			why = dnsErr.Err
		}
		return nil, &Refusal{Reason: ReasonResolveFailed, Message: fmt.Sprintf("cannot resolve %s: %s", name, why)}
	}
	if len(addrs) == 0 {
		return nil, &Refusal{Reason: ReasonResolveFailed, Message: fmt.Sprintf("%s has no addresses", name)}
	}
	return addrs, nil
}

// dialPermitted connects to the first of addrs (all judged by decide) that answers, within dialTimeout, and
// counts the verdict. It dials addresses only, never the name, so no DNS answer can change between the
// check and the dial.
func (p *Proxy) dialPermitted(ctx context.Context, s *session, addrs []netip.Addr, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	dial := p.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout}).DialContext
	}
	var errs []error
	for _, a := range addrs {
		c, err := dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			if !s.track(c) {
				return nil, errStopped
			}
			countAllowed()
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	countFailed()
	return nil, errors.Join(errs...)
}

var errStopped = errors.New("the egress proxy is stopping")
