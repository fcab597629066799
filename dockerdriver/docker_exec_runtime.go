package dockerdriver

// hostPIDRuntimes are the OCI runtimes whose container processes are processes of the host: Docker's process
// list (docker top) names them by host PID, and the agent finds and signals them in its /proc. gVisor's runsc
// is not one: its processes live in a kernel of its own, Docker's list names them by gVisor's PIDs (matched
// against the host's ps, so that it shows whichever host processes have those numbers), and an exec's PID is
// the host's runsc process relaying it, outside the container's cgroup (docs/security.md, "What does not
// work under gVisor"). runsc is also the runtime that gives an exec no terminal, so the same test refuses one.
var hostPIDRuntimes = map[string]bool{"": true, "runc": true, "io.containerd.runc.v2": true, "crun": true}

// gVisorThreadRoom is what a container under runsc gets in its host pids limit beyond twice the Sandbox's own:
// the host's limit counts the sandbox's host threads (Sentry, gofer and, on the ptrace platform, a stub per
// guest thread), whose number grows with load as the Go runtime adds threads for blocked system calls. runsc
// 20221219 on ptrace failed to start a one-process container under a host limit of 32, and a probe of five
// processes failed to fork under 128 on a loaded machine (the e2e spec of 7 December 2026); a failed start
// leaves its shim, gofer and Sentry running on the host (docs/security.md, "What does not work under gVisor").
const gVisorThreadRoom = 128

// hostPidsLimit is the pids limit Docker is given for a Sandbox that may run limit processes: the limit itself
// under runc, and under gVisor room for a stub per guest thread and for gVisor's own threads besides.
func hostPidsLimit(runtime string, limit int64) int64 {
	if hostPIDs(runtime) {
		return limit
	}
	return 2*limit + gVisorThreadRoom
}

// hostPIDs tells whether the processes of a container created with runtime are host processes.
func hostPIDs(runtime string) bool { return hostPIDRuntimes[runtime] }

// refusedUnderGVisor is the refusal of what cannot work under runsc: what, and the runtime.
func refusedUnderGVisor(name, runtime, what string) *Error {
	const see = `docs/security.md, "What does not work under gVisor"`
	return errorf(KindInvalidSpec, PhaseExec, name, "%s, under %s (gVisor): see %s", what, runtime, see)
}
