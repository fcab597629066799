package main

import (
	"flag"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockside-dev/dockside/internal/mcpserver"
)

// capFlags are the MCP server's caps on what it creates and touches. Their defaults are the kind's own
// defaults (api/v1alpha1), so a Sandbox made without limits is as big as the caps allow and no bigger.
type capFlags struct {
	cpu, memory, workspace string
	pids                   int64
}

func (c *capFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&c.cpu, "max-cpu", "1", "the most CPU a Sandbox the server creates or uses may have (its default when a create gives none)")
	fs.StringVar(&c.memory, "max-memory", "512Mi", "the most memory, likewise")
	fs.StringVar(&c.workspace, "max-workspace", "512Mi", "the largest workspace, likewise")
	fs.Int64Var(&c.pids, "max-pids", 256, "the most processes and threads, likewise")
}

func (c *capFlags) parse() (mcpserver.Caps, error) {
	caps := mcpserver.Caps{Pids: c.pids}
	if c.pids < 16 {
		return caps, fmt.Errorf("--max-pids must be 16 or more, as a Sandbox's pids")
	}
	for _, q := range []struct {
		flag, value string
		into        *resource.Quantity
	}{{"--max-cpu", c.cpu, &caps.CPU}, {"--max-memory", c.memory, &caps.Memory}, {"--max-workspace", c.workspace, &caps.Workspace}} {
		v, err := resource.ParseQuantity(q.value)
		if err != nil || v.Sign() <= 0 {
			return caps, fmt.Errorf("%s %q is not a positive quantity like 500m, 2, 256Mi or 1Gi", q.flag, q.value)
		}
		*q.into = v
	}
	return caps, nil
}
