package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

const logsUsage = `Usage: kubectl dockside logs [flags] SANDBOX

Prints the output of a finished run (a Sandbox with a command): the last 8192 bytes of its combined stdout and
stderr, as the agent keeps them in status.result.outputTail. When earlier output was cut, how much is said
on stderr. --wait waits for a run that has not finished yet.

A session's (a Sandbox without a command) primary output is not served: the agent keeps no copy of it in
the API, and the plugin reads nothing but the API. Run a command in the session with kubectl dockside exec
to read what it writes to files.
Exit codes: 0 the output was printed (whatever the run's own exit code, which status.result.exitCode has),
1 there is no output to print (a session, or a run not finished), 2 usage, 124 --timeout passed.
`

func logsVerb() verb {
	k := &kubeFlags{}
	w := &waitFlags{}
	return verb{
		usage: logsUsage, minArgs: 1, maxArgs: 1,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			fs.BoolVar(&w.wait, "wait", false, "wait until the run has finished")
			fs.DurationVar(&w.timeout, "timeout", 10*time.Minute, "how long --wait waits; past it the plugin exits 124")
		},
		run: func(ctx context.Context, args []string) error {
			return logs(ctx, k, w, args[0])
		},
	}
}

func logs(ctx context.Context, k *kubeFlags, w *waitFlags, name string) error {
	c, sbx, err := k.sandbox(ctx, name)
	if err != nil {
		return err
	}
	if len(sbx.Spec.Command) == 0 {
		return fmt.Errorf("the Sandbox %s is a session: its primary's output is not kept in the API, so there is none to print; read files it writes with kubectl dockside exec", name)
	}
	if sbx.Status.Result == nil && w.wait {
		ctx, cancel := context.WithTimeout(ctx, w.timeout)
		defer cancel()
		err := poll(ctx, c, sbx, func() (bool, error) { return sbx.Status.Result != nil, nil })
		if err != nil {
			return timedOut(err, "the run of Sandbox "+name+" to finish", readyOf(sbx.Status.Conditions))
		}
	}
	res := sbx.Status.Result
	if res == nil {
		return fmt.Errorf("the run of Sandbox %s has not finished (%s); its output is kept once it ends: use --wait", name, readyOf(sbx.Status.Conditions))
	}
	fmt.Print(res.OutputTail)
	if res.TruncatedBytes > 0 {
		warn("logs: %d earlier bytes of output were cut; the agent keeps the last %d", res.TruncatedBytes, dsv1alpha1.MaxOutputTailBytes)
	}
	return nil
}
