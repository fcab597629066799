// Package handoff is what the reconcilers hand one another about a Sandbox, through the agent that wires
// them, without importing one another (docs/design/layout.md): holds (Freezes: a capture or a command has the
// Sandbox), running commands (Commands), poisonings for the Sandbox reconciler to write (Verdicts), and passes
// asked for at once or at a time (Wakeups, Requeue).
package handoff
