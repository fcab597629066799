package v1alpha1

// Condition types of SandboxServices, besides Ready (conditions.go).
const (
	// ConditionInUse: some Sandbox names this SandboxService, so it cannot be deleted yet.
	ConditionInUse = "InUse"
)

// Condition reasons of SandboxServices, besides SecretNotFound (conditions.go).
const (
	ReasonAccepted = "Accepted" // Ready=True: its spec can be run
	ReasonInUse    = "InUse"    // some Sandbox names it
	ReasonNotInUse = "NotInUse" // no Sandbox names it
)
