package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

const psUsage = `Usage: kubectl dockside ps [flags] SANDBOX

Lists the processes of SANDBOX that the data plane knows (RBAC: get on sandboxes/processes): those started in
the background through the processes subresource (the Python client's commands.run(..., background=True)) and
the execs that named themselves (kubectl dockside exec without -t), oldest first, running or ended in the last
15 minutes: ID, KIND (background or exec), STATE (Running, Exited(N), or Ended with the reason after the
command), AGE since it started, and its command.
Exit codes: 0 listed (none is no error), 1 the listing failed (the reason is printed), 2 usage.
`

func psVerb() verb {
	k := &kubeFlags{}
	return verb{
		usage: psUsage, minArgs: 1, maxArgs: 1,
		flags: k.add,
		run: func(ctx context.Context, args []string) error {
			c, err := k.processes(args[0])
			if err != nil {
				return err
			}
			procs, err := c.list(ctx)
			if err != nil {
				return err
			}
			return printProcesses(os.Stdout, procs, time.Now())
		},
	}
}

func printProcesses(out io.Writer, procs []remoteProcess, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSTATE\tAGE\tCOMMAND")
	for _, p := range procs {
		kind := "exec"
		if p.Background {
			kind = "background"
		}
		cmd := strings.Join(p.Command, " ")
		if p.Error != "" {
			cmd += "  (" + p.Error + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, kind, p.state(), age(p.StartTime.Time, now), cmd)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the list: %w", err)
	}
	return nil
}
