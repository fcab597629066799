package hostfirewall

import "github.com/google/nftables/expr"

// ForwardChainName is the table's chain on the forward hook: it sees what the host routes from one interface to
// another, such as a container's packets to the internet, to the metadata address or to the pod network.
//
// On Docker before 25, containers of an internal network still have a default route through the bridge's
// gateway; what keeps their packets in is Docker's own iptables rules, which a daemon run with
// --iptables=false does not have. This chain keeps them in whatever Docker does (docs/egress.md, "The host").
const ForwardChainName = "forward"

// ForwardRules returns the expressions of the forward chain's rules, in order, for cfg with its defaults
// filled in: one rule for each of ClosedPrefixes,
//
//	iifname "<ClosedPrefix>*" oifname != "<BridgePrefix>*" counter drop
//
// Traffic between the containers of one bridge is untouched. It is bridged, not routed, but Docker loads
// br_netfilter with bridge-nf-call-iptables=1, so bridged IPv4 frames pass the forward hook too, with the
// bridge as both input and output interface: the oifname match is what lets them through. Traffic from one
// Dockside bridge to another is left to Docker's network isolation rules. Bridges outside ClosedPrefixes
// (Unrestricted, "dsu-") are not matched.
func ForwardRules(cfg Config) ([][]expr.Any, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return forwardRules(cfg), nil
}

func forwardRules(cfg Config) [][]expr.Any {
	var rules [][]expr.Any
	for _, p := range cfg.ClosedPrefixes {
		rules = append(rules, concat(iifnamePrefix(p), oifnameNotPrefix(cfg.BridgePrefix),
			[]expr.Any{&expr.Counter{}}, verdict(expr.VerdictDrop)))
	}
	return rules
}
