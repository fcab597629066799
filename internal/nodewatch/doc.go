// Package nodewatch is the agent's watch over its node, beside the reconcilers: the Docker event pump and
// the sweeper, which turn what Docker shows into passes of the Sandbox reconciler (and have it remove
// orphans), and the collector of the node's Sandboxes by phase.
package nodewatch
