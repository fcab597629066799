// Package egress decides where an Isolated Sandbox may connect, and serves the HTTP(S) forward proxy through
// which it does so.
//
// The decision has two halves, taken in this order for every request: the Sandbox's own list
// (spec.network.allow, an Allowlist) judges the destination as the client named it, before any DNS lookup;
// then the node's Policy judges every address that name resolves to, so that no allowed name can lead to the
// cloud metadata address, the host, a private network or another Sandbox. The proxy dials only an address the
// Policy accepted, never the name again. docs/egress.md describes the whole of egress control.
package egress
