package v1alpha1

// Field paths usable in field selectors (they are CRD selectableFields, so the API server filters on them) and,
// with the same names, as controller-runtime cache indexes. Each node's agent lists and watches only
// `spec.nodeName=<its node>` plus the unbound `spec.nodeName=`.
const (
	// FieldSandboxNodeName selects Sandboxes by spec.nodeName.
	FieldSandboxNodeName = "spec.nodeName"
	// FieldCheckpointSandboxName selects Checkpoints by spec.sandboxName.
	FieldCheckpointSandboxName = "spec.sandboxName"
	// FieldCheckpointNodeName selects Checkpoints by status.nodeName, the node storing the archive.
	FieldCheckpointNodeName = "status.nodeName"
)

// IndexSandboxServices is a cache index name (not a selectable field: it is a list) mapping a SandboxService
// name to the Sandboxes in its namespace that name it in spec.services.
const IndexSandboxServices = "spec.services"

// FieldExecutionSandboxName selects Executions by spec.sandboxName (a CRD selectable field, and the name of
// the agent's cache index of Executions by Sandbox).
const FieldExecutionSandboxName = "spec.sandboxName"
