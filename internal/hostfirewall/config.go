package hostfirewall

import (
	"errors"
	"fmt"
	"strings"
)

// Config names the table, the interfaces it filters and the namespace it goes in.
type Config struct {
	Table        string // default "dockside"
	BridgePrefix string // default "ds": host input from these interfaces is dropped
	ProxyPrefix  string // default "dsi-": these may reach ProxyPort
	ProxyPort    uint16 // required
	// ClosedPrefixes (default "dsi-", "dsn-"; empty means the default) name the bridges nothing may be routed
	// out of, except to another BridgePrefix interface.
	ClosedPrefixes []string
	NetNSFd        int // 0: the current (host) network namespace; tests pass a namespace of their own
}

// Defaults of Config's fields, and the longest interface name the kernel takes (IFNAMSIZ less its NUL).
const (
	DefaultTable        = "dockside"
	DefaultBridgePrefix = "ds"
	DefaultProxyPrefix  = "dsi-"
	defaultClosedPrefix = "dsn-"
	maxIfNameLen        = 15
	maxTableNameLen     = 255
)

// DefaultClosedPrefixes are the bridges of Isolated and None sandboxes, a new slice on each call.
func DefaultClosedPrefixes() []string { return []string{DefaultProxyPrefix, defaultClosedPrefix} }

// withDefaults fills the empty fields and refuses a Config whose rules would not mean what it says.
func (c Config) withDefaults() (Config, error) {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.BridgePrefix == "" {
		c.BridgePrefix = DefaultBridgePrefix
	}
	if c.ProxyPrefix == "" {
		c.ProxyPrefix = DefaultProxyPrefix
	}
	if len(c.ClosedPrefixes) == 0 {
		c.ClosedPrefixes = DefaultClosedPrefixes()
	}
	return c, c.validate()
}

func (c Config) validate() error {
	var errs []error
	if c.ProxyPort == 0 {
		errs = append(errs, errors.New("ProxyPort is required"))
	}
	if len(c.Table) > maxTableNameLen || strings.ContainsRune(c.Table, 0) {
		// Each error names the field it is about, as the others here do.
		errs = append(errs, fmt.Errorf("Table %q is not a valid nftables table name", c.Table)) //nolint:staticcheck // ST1005: a field's name
	}
	errs = append(errs, validPrefix("BridgePrefix", c.BridgePrefix), validPrefix("ProxyPrefix", c.ProxyPrefix))
	// An exception for interfaces the drop does not cover would accept nothing the policy does not already
	// accept: the configuration is wrong, not the rule.
	if !strings.HasPrefix(c.ProxyPrefix, c.BridgePrefix) {
		errs = append(errs, fmt.Errorf("ProxyPrefix %q must start with BridgePrefix %q", c.ProxyPrefix, c.BridgePrefix))
	}
	for i, p := range c.ClosedPrefixes {
		errs = append(errs, validClosedPrefix(fmt.Sprintf("ClosedPrefixes[%d]", i), p, c.BridgePrefix))
	}
	if c.NetNSFd < 0 {
		errs = append(errs, fmt.Errorf("NetNSFd %d is not a file descriptor", c.NetNSFd))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hostfirewall: invalid config: %w", err)
	}
	return nil
}

// validClosedPrefix checks a prefix of the forward chain. An empty one would match every interface, and one
// outside the bridges would stop the host's own routing instead of a sandbox's: neither can be meant.
func validClosedPrefix(field, prefix, bridgePrefix string) error {
	switch {
	case prefix == "":
		return fmt.Errorf("%s is empty", field)
	case !strings.HasPrefix(prefix, bridgePrefix):
		return fmt.Errorf("%s %q must start with BridgePrefix %q", field, prefix, bridgePrefix)
	}
	return validPrefix(field, prefix)
}

// validPrefix checks that prefix could begin an interface name: the kernel refuses longer names and names with
// '/', ':' or white space, and a '*' is taken literally here, not as a wildcard.
func validPrefix(field, prefix string) error {
	switch {
	case len(prefix) > maxIfNameLen:
		return fmt.Errorf("%s %q is longer than an interface name (%d bytes)", field, prefix, maxIfNameLen)
	case strings.ContainsAny(prefix, "/:* \t\n\v\f\r\x00"):
		return fmt.Errorf("%s %q holds a character no interface name has, or a '*' (it is a prefix, not a pattern)", field, prefix)
	}
	return nil
}
