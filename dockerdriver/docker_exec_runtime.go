package dockerdriver

// hostPIDRuntimes are the OCI runtimes whose container processes are processes of the host: Docker's process
// list (docker top) names them by host PID, and the agent finds and signals them in its /proc. gVisor's runsc
// is not one: its processes live in a kernel of its own, Docker's list names them by gVisor's PIDs (matched
// against the host's ps, so that it shows whichever host processes have those numbers), and an exec's PID is
// the host's runsc process relaying it, outside the container's cgroup (docs/security.md, "What does not
// work under gVisor"). runsc is also the runtime that gives an exec no terminal, so the same test refuses one.
var hostPIDRuntimes = map[string]bool{"": true, "runc": true, "io.containerd.runc.v2": true, "crun": true}

// minGVisorPIDs is the least pids limit a container under runsc is given: the limit counts the sandbox's host
// threads (Sentry, gofer and, on the ptrace platform, a stub per guest thread), and runsc 20221219 on ptrace
// failed to start a one-process container under 32 and started it under 64; a failed start left its shim,
// gofer and Sentry running on the host.
const minGVisorPIDs = 64

// hostPIDs tells whether the processes of a container created with runtime are host processes.
func hostPIDs(runtime string) bool { return hostPIDRuntimes[runtime] }

// refusedUnderGVisor is the refusal of what cannot work under runsc: what, and the runtime.
func refusedUnderGVisor(name, runtime, what string) *Error {
	const see = `docs/security.md, "What does not work under gVisor"`
	return errorf(KindInvalidSpec, PhaseExec, name, "%s, under %s (gVisor): see %s", what, runtime, see)
}
