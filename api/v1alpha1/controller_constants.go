package v1alpha1

// Condition reasons the Sandbox agent needs beyond those in conditions.go: the True (or healthy) side of
// conditions that conditions.go names only by their problems, and waits that are not failures.
const (
	ReasonBound               = "Bound"               // Scheduled=True: bound to a node whose agent accepted it
	ReasonAllReady            = "AllReady"            // ServicesReady=True: every service instance is ready
	ReasonUpToDate            = "UpToDate"            // ServicesUpToDate=True
	ReasonOutOfDate           = "OutOfDate"           // ServicesUpToDate=False: built from an older SandboxService
	ReasonHealthy             = "Healthy"             // TopologyPoisoned=False
	ReasonSecretNotFound      = "SecretNotFound"      // an env valueFrom names a missing Secret or key
	ReasonRestoreNotSupported = "RestoreNotSupported" // restoreFrom is set but this agent cannot restore yet
	ReasonNoFreeSubnet        = "NoFreeSubnet"        // every subnet of the node's topology pool is held; waits for one
)
