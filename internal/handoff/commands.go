package handoff

import "k8s.io/apimachinery/pkg/types"

// Commands tells whether an Execution's command runs in a Sandbox now. The Sandbox reconciler asks before it
// reads a stopped primary as PrimaryExited: a run that killed it (deadline, cancel) says why itself, through
// Verdicts. The execution package's runs implement it.
type Commands interface {
	Running(sandbox types.UID) bool
}
