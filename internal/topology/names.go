package topology

import (
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// HolderMountPath is where the holder mounts the workspace: captures copy out of it and restores into it.
const HolderMountPath = "/workspace"

// Names are the Docker names of one Sandbox's objects at one topology generation. Per-topology objects (the
// primary, services, the topology network) carry the generation; the workspace and its holder outlive rolls
// and so are named at generation 0 (docs/design/docker-mapping.md, "Labels, names and objects"). The Execution and
// Checkpoint reconcilers name the containers they work in through this, never by the rule itself.
type Names struct {
	Sandbox    types.NamespacedName
	UID        types.UID
	Generation int64 // topology generation
}

// NamesOf names the objects of the Sandbox's current topology.
func NamesOf(sbx *dsv1alpha1.Sandbox) Names {
	return Names{
		Sandbox: types.NamespacedName{Namespace: sbx.Namespace, Name: sbx.Name}, UID: sbx.UID,
		Generation: sbx.Status.TopologyGeneration,
	}
}

func (n Names) owner(generation int64) dd.Owner {
	return dd.Owner{Namespace: n.Sandbox.Namespace, Name: n.Sandbox.Name, UID: string(n.UID), Generation: generation}
}

// Primary names the primary container, where Executions run.
func (n Names) Primary() string { return dd.Name(n.owner(n.Generation), dsv1alpha1.RolePrimary, "") }

// Network names the topology's own network.
func (n Names) Network() string { return dd.Name(n.owner(n.Generation), dsv1alpha1.RoleNetwork, "") }

// Service names the Sandbox's instance of a SandboxService.
func (n Names) Service(service string) string {
	return dd.Name(n.owner(n.Generation), dsv1alpha1.RoleService, service)
}

// Holder names the container that keeps the workspace mounted while no primary runs.
func (n Names) Holder() string { return dd.Name(n.owner(0), dsv1alpha1.RoleHolder, "") }

// Workspace names the workspace volume.
func (n Names) Workspace() string { return dd.Name(n.owner(0), dsv1alpha1.RoleWorkspace, "") }

// Owner is the owner the driver labels the topology's objects with.
func (n Names) Owner() dd.Owner { return n.owner(n.Generation) }

// WorkspaceOwner is the owner the driver labels the workspace and its holder with.
func (n Names) WorkspaceOwner() dd.Owner { return n.owner(0) }
