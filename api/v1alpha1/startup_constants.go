package v1alpha1

// Reasons of a Sandbox's start: its images, and the startup deadline (spec.startupDeadlineSeconds). A start
// that fails for good (the deadline passed, or an image the spec must change) sets TopologyPoisoned=True with
// one of these reasons, like a service that stopped would, and what the start had built is removed; the
// workspace is kept.
const (
	// Images. Each message names the image and whose it is (the primary's or a service's).
	ReasonImagePulling           = "ImagePulling"           // a pull is under way (shared with other Sandboxes needing it)
	ReasonImagePullFailed        = "ImagePullFailed"        // the last pull failed; tried again until the startup deadline
	ReasonImageNotPresent        = "ImageNotPresent"        // imagePullPolicy Never, and the node does not hold the image
	ReasonImageNotPinned         = "ImageNotPinned"         // the node runs only digest-pinned images (--require-digest)
	ReasonImageDigestMismatch    = "ImageDigestMismatch"    // a pull of a pinned image brought content of another digest
	ReasonImageDeclaresVolumes   = "ImageDeclaresVolumes"   // the image declares a VOLUME no workspace or scratch mount covers
	ReasonImagePullSecretInvalid = "ImagePullSecretInvalid" // imagePullSecret is not a readable kubernetes.io/dockerconfigjson Secret

	// The startup deadline passed; the reason names the phase the start was in.
	ReasonImagePullTimeout = "ImagePullTimeout" // pulling an image (the message has the last attempt's outcome)
	ReasonWorkspaceTimeout = "WorkspaceTimeout" // making the workspace or its holder
	ReasonRestoreTimeout   = "RestoreTimeout"   // copying a Checkpoint in
	ReasonNetworkTimeout   = "NetworkTimeout"   // making the topology's network
	ReasonServiceNotReady  = "ServiceNotReady"  // starting a service or waiting for its readiness (the message names it)
	ReasonStartTimeout     = "StartTimeout"     // creating or starting the primary container
)
