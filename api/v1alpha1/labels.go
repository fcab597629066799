package v1alpha1

// Docker labels that identify everything Dockside creates. Lookups go by these labels, never by name alone,
// so that a restarted agent can rebuild what it owns from Docker and several agents sharing one daemon
// (different node names) never touch each other's containers, networks or volumes.
const (
	LabelPrefix     = "dev.dockside."
	LabelManaged    = LabelPrefix + "managed"    // "true" on everything Dockside creates
	LabelNamespace  = LabelPrefix + "namespace"  // namespace of the owning object
	LabelName       = LabelPrefix + "name"       // name of the owning object
	LabelUID        = LabelPrefix + "uid"        // UID of the owning object
	LabelNode       = LabelPrefix + "node"       // node (agent) that owns the resource
	LabelRole       = LabelPrefix + "role"       // one of the Role* values below
	LabelService    = LabelPrefix + "service"    // SandboxService name, on service containers
	LabelGeneration = LabelPrefix + "generation" // topology generation the resource belongs to
	LabelSubnet     = LabelPrefix + "subnet"     // subnet a topology network holds, so a restart knows what is taken
)

// Values of LabelRole.
const (
	RolePrimary   = "primary"   // the Sandbox's own container
	RoleService   = "service"   // one instance of a SandboxService
	RoleHolder    = "holder"    // the tiny container that keeps the tmpfs workspace alive
	RoleNetwork   = "network"   // a per-topology bridge
	RoleWorkspace = "workspace" // the workspace volume
	RoleSecrets   = "secrets"   // the volume of a Sandbox's secretFiles
	RoleRun       = "run"       // a session primary's run volume: the output of its Executions (and, in one made before RoleSupervisor, their supervisor)
	RoleSupervise = "supervise" // a session primary's supervisor volume, read-only in it: the supervisor of its Executions
)
