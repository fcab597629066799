package hostfirewall

import (
	"errors"
	"fmt"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// ErrNoPrivilege is wrapped into the error of Install or Remove when the kernel refused for want of privilege
// (CAP_NET_ADMIN, or CAP_SYS_ADMIN to enter NetNSFd), so that the agent can warn and go on without the table.
var ErrNoPrivilege = errors.New("no privilege to change the host firewall")

// Install replaces the table with cfg's: one netlink batch adds the table (a no-op when it exists), deletes it
// with whatever it held, and adds it again with its chains and rules. The kernel applies a batch whole or not
// at all, so no packet ever sees a half-built table, and running Install twice leaves the same table.
func Install(cfg Config) error {
	return install(cfg)
}

// Remove deletes the table. The batch adds it first so that deleting an absent table is no error.
func Remove(cfg Config) error {
	return remove(cfg)
}

// install and remove take extra connection options so that unit tests can see the batch without a kernel.
func install(cfg Config, opts ...nftables.ConnOption) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	return flush(cfg, "install", opts, func(c *nftables.Conn) {
		t := table(cfg)
		c.AddTable(t)
		c.DelTable(t)
		c.AddTable(t)
		addChain(c, baseChain(t, ChainName, nftables.ChainHookInput), rules(cfg))
		addChain(c, baseChain(t, ForwardChainName, nftables.ChainHookForward), forwardRules(cfg))
	})
}

// addChain queues ch and its rules, in order.
func addChain(c *nftables.Conn, ch *nftables.Chain, rules [][]expr.Any) {
	c.AddChain(ch)
	for _, exprs := range rules {
		c.AddRule(&nftables.Rule{Table: ch.Table, Chain: ch, Exprs: exprs})
	}
}

func remove(cfg Config, opts ...nftables.ConnOption) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	return flush(cfg, "remove", opts, func(c *nftables.Conn) {
		t := table(cfg)
		c.AddTable(t)
		c.DelTable(t)
	})
}

// flush queues one batch on a connection to cfg's namespace and sends it.
func flush(cfg Config, what string, opts []nftables.ConnOption, queue func(*nftables.Conn)) error {
	c, err := nftables.New(append([]nftables.ConnOption{nftables.WithNetNSFd(cfg.NetNSFd)}, opts...)...)
	if err == nil {
		queue(c)
		err = c.Flush()
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("hostfirewall: %s table inet %s: %w: %w", what, cfg.Table, ErrNoPrivilege, err)
	}
	return fmt.Errorf("hostfirewall: %s table inet %s: %w", what, cfg.Table, err)
}

// Installed tells whether cfg's table exists, so that an agent can put it back after something else (a second
// agent's exit, a firewall service's reload) removed it.
func Installed(cfg Config) (bool, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return false, err
	}
	c, err := nftables.New(nftables.WithNetNSFd(cfg.NetNSFd))
	if err != nil {
		return false, fmt.Errorf("hostfirewall: opening netlink: %w", err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("hostfirewall: listing tables: %w", err)
	}
	for _, t := range tables {
		if t.Name == cfg.Table {
			return true, nil
		}
	}
	return false, nil
}
