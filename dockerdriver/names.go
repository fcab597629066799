package dockerdriver

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Owner identifies the Dockside object a Docker resource belongs to. Generation is the topology generation:
// per-topology resources (primary, services, network) carry the Sandbox's topology generation; per-Sandbox
// resources that outlive a rolled topology (workspace volume, holder) are named with Generation 0.
type Owner struct {
	Namespace  string
	Name       string
	UID        string
	Generation int64
}

// Name is the deterministic Docker name of the resource with this owner, role and service (service only for
// RoleService). Two racing creates, or a create whose answer was lost, land on one name, which the next
// Ensure adopts. The readable part helps people reading `docker ps`; the hash makes it unique.
func Name(o Owner, role, service string) string {
	sum := sha256.Sum256([]byte(strings.Join(
		[]string{o.Namespace, o.Name, o.UID, strconv.FormatInt(o.Generation, 10), role, service}, "\x00")))
	readable := clip(sanitize(o.Namespace+"-"+o.Name), 40) + "-" + role
	if service != "" {
		readable += "-" + clip(sanitize(service), 30)
	}
	return "dockside-" + readable + "-" + hex.EncodeToString(sum[:6])
}

// NodeNetworkName is the name of the node's shared bridge, used by sandboxes that need egress but no
// topology of their own (inter-container traffic off, so they cannot reach each other).
func NodeNetworkName(node string) string {
	sum := sha256.Sum256([]byte(node))
	return "dockside-node-" + clip(sanitize(node), 40) + "-" + hex.EncodeToString(sum[:4])
}

// NodeIsolatedNetworkName is the name of the node's shared bridge for Isolated sandboxes without services:
// internal (no route out; the egress proxy on its gateway is the way out) and inter-container traffic off.
func NodeIsolatedNetworkName(node string) string {
	sum := sha256.Sum256([]byte(node))
	return "dockside-isolated-" + clip(sanitize(node), 40) + "-" + hex.EncodeToString(sum[:4])
}

// Prefixes of the host interface names of Dockside's bridges. The host firewall drops what a bridge whose
// name starts with BridgePrefix sends to the host, except, from BridgeProxied bridges, connections to the
// egress proxy (docs/egress.md).
const (
	BridgePrefix  = "ds"
	BridgeProxied = "dsi-" // mode Isolated: the egress proxy on the gateway is the only way out
	BridgeClosed  = "dsn-" // mode None: no way out
	BridgeOpen    = "dsu-" // mode Unrestricted: routed out, masqueraded
)

// maxInterfaceName is Linux's limit on an interface name (IFNAMSIZ less the terminating NUL).
const maxInterfaceName = 15

// BridgeName is the host interface name of the bridge of network: prefix and a digest of the network's name,
// as long as Linux allows.
func BridgeName(prefix, network string) string {
	sum := sha256.Sum256([]byte(network))
	return prefix + hex.EncodeToString(sum[:])[:maxInterfaceName-len(prefix)]
}

// Labels is the full Dockside label set of a resource created by the agent of node. Empty owner fields and
// an empty service are left out; a zero generation is kept (it names per-Sandbox resources).
func Labels(node string, o Owner, role, service string) map[string]string {
	l := map[string]string{
		dsv1alpha1.LabelManaged:    "true",
		dsv1alpha1.LabelNode:       node,
		dsv1alpha1.LabelRole:       role,
		dsv1alpha1.LabelGeneration: strconv.FormatInt(o.Generation, 10),
	}
	for k, v := range map[string]string{
		dsv1alpha1.LabelNamespace: o.Namespace, dsv1alpha1.LabelName: o.Name, dsv1alpha1.LabelUID: o.UID, dsv1alpha1.LabelService: service,
	} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// OwnerFromLabels reads back what Labels wrote; a missing or malformed generation reads as 0.
func OwnerFromLabels(l map[string]string) (o Owner, role, service string) {
	gen, _ := strconv.ParseInt(l[dsv1alpha1.LabelGeneration], 10, 64)
	return Owner{Namespace: l[dsv1alpha1.LabelNamespace], Name: l[dsv1alpha1.LabelName], UID: l[dsv1alpha1.LabelUID], Generation: gen},
		l[dsv1alpha1.LabelRole], l[dsv1alpha1.LabelService]
}

// identityMatches tells whether an existing object's labels are the ones this driver would give it, i.e.
// whether it may be adopted. Only identity labels count; extra labels (subnet) are compared by the caller.
func identityMatches(have, want map[string]string) bool {
	for _, k := range []string{dsv1alpha1.LabelManaged, dsv1alpha1.LabelNode, dsv1alpha1.LabelNamespace, dsv1alpha1.LabelName, dsv1alpha1.LabelUID,
		dsv1alpha1.LabelRole, dsv1alpha1.LabelService, dsv1alpha1.LabelGeneration} {
		if have[k] != want[k] {
			return false
		}
	}
	return true
}

// sanitize keeps the characters Docker allows in names ([a-zA-Z0-9_.-]) and maps the rest to '-'.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '-'
	}, s)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
