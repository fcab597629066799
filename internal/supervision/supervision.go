// Package supervision is what the agent and the supervisor (cmd/dockside-supervise) agree on beyond the
// supervisor's arguments (docs/design/decisions/0028-commands-run-under-a-supervisor.md).
package supervision

// StdinEnv is the variable of the supervisor's own environment that holds the command's standard input,
// base64-encoded (an Execution's stdin is at most 64 KiB: about 87 KiB encoded, within Linux's 128 KiB for
// one variable). The supervisor takes it out of the environment the command gets, and feeds the command its
// bytes: the input is part of the exec as Docker made it, so no connection of the agent's has to carry it,
// and an agent that stops while the command starts takes none of it along.
const StdinEnv = "DOCKSIDE_SUPERVISE_STDIN"

// Version is what this agent and supervisor speak; the holder image says which its supervisor speaks in its
// dev.dockside.supervisor label, and the agent copies only a supervisor of this version. A supervisor of
// another version is installed under another name in the run volume.
const Version = "3"
