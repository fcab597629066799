package dockerdriver

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	v1 "github.com/dockside-dev/dockside/api/v1alpha1"
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

// Labels is the full Dockside label set of a resource created by the agent of node. Empty owner fields and
// an empty service are left out; a zero generation is kept (it names per-Sandbox resources).
func Labels(node string, o Owner, role, service string) map[string]string {
	l := map[string]string{
		v1.LabelManaged:    "true",
		v1.LabelNode:       node,
		v1.LabelRole:       role,
		v1.LabelGeneration: strconv.FormatInt(o.Generation, 10),
	}
	for k, v := range map[string]string{
		v1.LabelNamespace: o.Namespace, v1.LabelName: o.Name, v1.LabelUID: o.UID, v1.LabelService: service,
	} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// OwnerFromLabels reads back what Labels wrote; a missing or malformed generation reads as 0.
func OwnerFromLabels(l map[string]string) (o Owner, role, service string) {
	gen, _ := strconv.ParseInt(l[v1.LabelGeneration], 10, 64)
	return Owner{Namespace: l[v1.LabelNamespace], Name: l[v1.LabelName], UID: l[v1.LabelUID], Generation: gen},
		l[v1.LabelRole], l[v1.LabelService]
}

// identityMatches tells whether an existing object's labels are the ones this driver would give it, i.e.
// whether it may be adopted. Only identity labels count; extra labels (subnet) are compared by the caller.
func identityMatches(have, want map[string]string) bool {
	for _, k := range []string{v1.LabelManaged, v1.LabelNode, v1.LabelNamespace, v1.LabelName, v1.LabelUID,
		v1.LabelRole, v1.LabelService, v1.LabelGeneration} {
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
