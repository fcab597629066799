package topology

import (
	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// SharedNetworkSpec is the node's shared bridge for Sandboxes without services of mode: inter-container
// traffic off, routed out only for Unrestricted.
func SharedNetworkSpec(node string, mode dsv1alpha1.NetworkMode) dd.NetworkSpec {
	name := dd.NodeNetworkName(node)
	if mode == dsv1alpha1.NetworkIsolated {
		name = dd.NodeIsolatedNetworkName(node)
	}
	return dd.NetworkSpec{Name: name, Internal: mode != dsv1alpha1.NetworkUnrestricted, ICC: false, Bridge: dd.BridgeName(BridgePrefix(mode), name)}
}

// BridgePrefix names a bridge for the host firewall by what its Sandboxes may reach.
func BridgePrefix(mode dsv1alpha1.NetworkMode) string {
	switch mode {
	case dsv1alpha1.NetworkIsolated:
		return dd.BridgeProxied
	case dsv1alpha1.NetworkUnrestricted:
		return dd.BridgeOpen
	}
	return dd.BridgeClosed
}
