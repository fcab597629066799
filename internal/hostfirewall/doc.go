// Package hostfirewall installs the host firewall rules that keep sandboxes off the Docker host's own
// addresses and keep closed sandboxes in: one nftables table of family inet (IPv4 and IPv6), owned by
// Dockside, with two chains. Its input chain drops everything that arrives from a Dockside bridge (interface
// names starting with "ds") except replies to connections the host opened and, from the bridges whose
// sandboxes use it, the agent's egress proxy port. Its forward chain drops whatever enters from an Isolated or
// None bridge ("dsi-", "dsn-") and would be routed out of an interface that is not a Dockside bridge.
//
// Docker's own rules live in other tables. A drop in any table wins and an accept in ours bypasses nothing of
// theirs, so this table can only take reachability away. The rules are sent over netlink in one batch, so no
// nft or iptables binary is needed (the agent image is FROM scratch). docs/egress.md explains the design.
package hostfirewall
