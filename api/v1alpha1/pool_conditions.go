package v1alpha1

// Reasons of SandboxWarmPool conditions (Ready, Reconciling, Stalled).
const (
	ReasonFilled           = "Filled"           // as many warm Sandboxes available as asked
	ReasonFilling          = "Filling"          // warm Sandboxes are being started or replaced
	ReasonYieldingRoom     = "YieldingRoom"     // a Sandbox waits for room: the pool starts none and gives up warm ones
	ReasonTemplateNotFound = "TemplateNotFound" // templateRef (or a claim's pool's) names no SandboxTemplate
	ReasonLazyTemplate     = "LazyTemplate"     // the template starts its Sandboxes lazily, which a pool cannot keep warm
)

// Reasons of SandboxClaim conditions (Ready, Reconciling, Stalled).
const (
	ReasonClaimed            = "Claimed"            // the claim holds a Ready Sandbox
	ReasonColdStart          = "ColdStart"          // no warm Sandbox was ready: one is being started for the claim
	ReasonPoolNotFound       = "PoolNotFound"       // poolRef names no SandboxWarmPool (looked for again)
	ReasonOverrideNotAllowed = "OverrideNotAllowed" // the claim sets what its template's claimOverrides leave out
	ReasonSandboxNameTaken   = "SandboxNameTaken"   // a cold start's Sandbox name is another Sandbox's
	ReasonInvalidLabels      = "InvalidLabels"      // the API server refused the claim's labels on the Sandbox
	ReasonSandboxFailed      = "SandboxFailed"      // the claimed Sandbox is Stalled (its reason is in the message)
	ReasonSandboxGone        = "SandboxGone"        // the claimed Sandbox was deleted: make a new claim
)

// Labels Dockside puts on the Sandboxes of pools and claims (Kubernetes labels of the Sandbox object, not
// Docker labels). Keys under dockside.dev/ are refused on claims.
const (
	// LabelPool names the SandboxWarmPool that made the Sandbox; it stays after a claim takes it.
	LabelPool = "dockside.dev/pool"
	// LabelTemplateHash is the pool's status.templateHash the Sandbox was made from.
	LabelTemplateHash = "dockside.dev/template-hash"
	// LabelClaim names the SandboxClaim that holds the Sandbox. A pool's Sandbox without it is warm.
	LabelClaim = "dockside.dev/claim"
)
