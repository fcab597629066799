// Command kubectl-dockside is the Dockside plugin of kubectl. Installed on the PATH, it runs as
// `kubectl dockside ...`:
//
//	kubectl dockside exec [-n NAMESPACE] [-i] [--timeout 60s] SANDBOX -- COMMAND [ARG...]
//
// exec runs COMMAND in a session Sandbox through an Execution (so RBAC and the audit log see it), prints its
// standard output and error, and exits with its exit code.
package main

import (
	"fmt"
	"os"
)

const usage = `Usage: kubectl dockside exec [flags] SANDBOX -- COMMAND [ARG...]

Runs COMMAND in the session Sandbox SANDBOX through an Execution, prints its standard output and standard
error, and exits with its exit code: 124 when it ran past --timeout (the Sandbox's container is then killed),
125 when it did not exit on its own for another reason (the reason is printed).

Flags:
`

func main() {
	if len(os.Args) < 2 || os.Args[1] != "exec" {
		fmt.Fprint(os.Stderr, usage)
		execFlags(&execOptions{}).PrintDefaults()
		os.Exit(2)
	}
	os.Exit(runExec(os.Args[2:]))
}
