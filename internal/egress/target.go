package egress

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
)

// target is where a client asked to go: a name (lowercase, without trailing dot) or an IP literal, and a port.
type target struct {
	host string     // as asked, normalised; the IP's text for a literal
	ip   netip.Addr // valid when the client asked for an IP literal
	port int
}

// String is host:port, the destination as refusals and OnRefused name it.
func (t target) String() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

// parseTarget reads the destination of a CONNECT host:port or an absolute-form http:// request; anything else
// is a BadRequest refusal.
func parseTarget(req *http.Request) (target, *Refusal) {
	if req.Method == http.MethodConnect {
		host, port, err := net.SplitHostPort(req.RequestURI)
		if err != nil {
			return target{}, badRequest("CONNECT takes host:port, got %s", quoted(req.RequestURI))
		}
		return parseHostPort(host, port)
	}
	if !req.URL.IsAbs() || req.URL.Host == "" {
		return target{}, badRequest("the egress proxy takes CONNECT host:port or an absolute http:// URL, got %s", quoted(req.RequestURI))
	}
	if req.URL.Scheme != "http" {
		return target{}, badRequest("only http:// URLs are forwarded (use CONNECT for https), got scheme %s", quoted(req.URL.Scheme))
	}
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	return parseHostPort(req.URL.Hostname(), port)
}

func parseHostPort(host, portText string) (target, *Refusal) {
	port, ok := parsePort(portText)
	if !ok {
		return target{}, badRequest("the port must be a number from 1 to 65535, got %s", quoted(portText))
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return target{}, badRequest("%s: an address with a zone names no destination", quoted(host))
		}
		ip = ip.Unmap()
		return target{host: ip.String(), ip: ip, port: port}, nil
	}
	name := normalName(host)
	if p := nameProblem(name); p != "" {
		return target{}, badRequest("%s is not a valid host name: %s", quoted(host), p)
	}
	return target{host: name, port: port}, nil
}

func badRequest(format string, args ...any) *Refusal {
	return &Refusal{Reason: ReasonBadRequest, Message: fmt.Sprintf(format, args...)}
}

// quoted makes client input safe to echo in a one-line answer: quoted, escaped, and cut to 100 bytes.
func quoted(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return strconv.Quote(s)
}
