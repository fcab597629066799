// Command kubectl-dockside is the Dockside plugin of kubectl. Installed on the PATH, it runs as
// `kubectl dockside VERB ...`; every verb works through the API server (so RBAC and the audit log see it) and
// takes kubectl's --kubeconfig, --context and -n/--namespace:
//
//	exec        run a command in a Sandbox as kubectl exec does: streamed, -i, -t, its exit code
//	run         run a command in a session Sandbox through an Execution (an object), with its exit code
//	pause       freeze a Sandbox (spec.lifecycle: Paused)
//	resume      thaw it
//	checkpoint  capture a Sandbox's workspace in a Checkpoint; prints its size and digest
//	restore     a new Sandbox restored from a Checkpoint (spec.restoreFrom)
//	claim       take a Sandbox of a warm pool (a SandboxClaim), with env for its commands
//	logs        the output tail of a finished run
//	cp          copy a file or a directory, of any size, into or out of a Sandbox (files subresource)
//	ls          list a directory of a Sandbox (files subresource)
//	port-forward forward a local port to a port of the Sandbox or of one of its services
//	ps          list the processes the data plane started in a Sandbox, and the execs that named themselves
//	kill        signal one of them by its ID
//	mcp         serve Sandboxes to an MCP host over stdio (docs/mcp.md)
//	version     print the plugin's version
//
// Each verb's -h says what it does and its exit codes.
package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/version"
)

const usage = `Usage: kubectl dockside VERB [flags] ARGS...

Verbs:
  exec        SANDBOX -- COMMAND [ARG...]   run a command in a Sandbox, streamed; -i, -t (exits with its code)
  run         SANDBOX -- COMMAND [ARG...]   run a command through an Execution, with a deadline (same)
  pause       SANDBOX                       freeze every container of a Sandbox
  resume      SANDBOX                       thaw a paused Sandbox
  checkpoint  SANDBOX [NAME]                capture its workspace; prints the Checkpoint's size and digest
  restore     CHECKPOINT NEW-SANDBOX        create a Sandbox restored from a Checkpoint
  claim       POOL [NAME]                   take a Sandbox of a warm pool; prints its name (docs/pools.md)
  logs        SANDBOX                       print a finished run's output tail
  cp          SANDBOX:PATH LOCAL | LOCAL SANDBOX:PATH   copy a file or directory out or in
  ls          SANDBOX [PATH]                list a directory of a Sandbox
  port-forward SANDBOX [SERVICE:]PORT [LOCAL]  forward a local port to the Sandbox's or a service's port
  ps          SANDBOX                       list its background processes and named execs
  kill        SANDBOX PROCESS [-s SIGNAL]   signal a process that ps lists (default TERM)
  mcp         --image IMAGE...              serve Sandboxes to an MCP host over stdio (docs/mcp.md)
  version                                   print the plugin's version (the commit it was built from)

Every verb takes --kubeconfig, --context and -n/--namespace, and -h for its own usage.
Exit codes of every verb but exec and run: 0 done, 1 Dockside or the API server reported a failure (printed),
2 usage error, 3 cp's copy is past the bound of the mount it goes to, 4 kill's process had ended already,
124 --timeout passed while waiting, 130 interrupted.
`

// verbs are the plugin's verbs but exec and run, which parse its arguments its own way (everything after the
// Sandbox's name is the command's).
func verbs() map[string]verb {
	return map[string]verb{
		"pause":        lifecycleVerb(dsv1alpha1.LifecyclePaused, pauseUsage),
		"resume":       lifecycleVerb(dsv1alpha1.LifecycleRunning, resumeUsage),
		"checkpoint":   checkpointVerb(),
		"restore":      restoreVerb(),
		"claim":        claimVerb(),
		"logs":         logsVerb(),
		"cp":           cpVerb(),
		"ls":           lsVerb(),
		"port-forward": portForwardVerb(),
		"ps":           psVerb(),
		"kill":         killVerb(),
		"mcp":          mcpVerb(),
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(exitUsage)
	}
	name, args := os.Args[1], os.Args[2:]
	switch name {
	case "exec":
		os.Exit(runExec(args))
	case "run":
		os.Exit(runExecution(args))
	case "version":
		fmt.Println("kubectl-dockside", version.String())
		os.Exit(0)
	}
	if slices.Contains([]string{"-h", "--help", "help"}, name) {
		fmt.Fprint(os.Stdout, usage)
		os.Exit(0)
	}
	v, ok := verbs()[name]
	if !ok {
		warn("unknown verb %q", strings.TrimSpace(name))
		fmt.Fprint(os.Stderr, usage)
		os.Exit(exitUsage)
	}
	os.Exit(runVerb(name, v, args))
}
