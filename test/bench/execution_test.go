package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dockside-dev/dockside/pkg/execution"
)

// executionRounds is how many times each command runs through an Execution and through docker exec.
const executionRounds = 30

// BenchmarkExecution times an Execution's round trip as an agent framework sees it through pkg/execution
// (create, wait for Succeeded, read the output, delete) for `true` and for a one-line Python print, against
// `docker exec` of the same command in the same Sandbox's container, in turns.
func BenchmarkExecution(b *testing.B) {
	e, ns := benchNamespace(b, "exec")
	ctx := context.Background()
	runner, err := execution.New(e.cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		key, title, image string
		command           []string
		want, goal        string
	}{
		{"exec-true", "Execution round trip of `true`", busybox, []string{"true"}, "", "p50 within 1.2x docker exec"},
		{"exec-python", "Execution round trip of a one-line Python print", "dockside.dev/python:local",
			[]string{"python3", "-c", "print(6 * 7)"}, "42\n", "p50 within 1.3x docker exec"},
	} {
		sbx := session(ns, tc.key)
		sbx.Spec.Image = tc.image
		if err := e.applyAndRead(ctx, sbx); err != nil {
			b.Fatal(err)
		}
		req := execution.Request{Namespace: ns, Sandbox: sbx.Name, Command: tc.command}
		before, err := e.snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var dockside, baseline []time.Duration
		for range executionRounds {
			d, err := timed(func() error { return expectOutput(runner.Run(ctx, req))(tc.want) })
			if err != nil {
				b.Fatal(err)
			}
			p, err := timed(func() error {
				_, err := docker(append([]string{"exec", sbx.Status.ContainerID}, tc.command...)...)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			dockside, baseline = append(dockside, d), append(baseline, p)
		}
		after, err := e.snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		perRound := func(v float64) *float64 { return num(v / executionRounds) }
		calls := diff(after.dockerCalls, before.dockerCalls)
		record(b, group{
			Key: tc.key, Title: fmt.Sprintf("%s, %d one after another", tc.title, executionRounds),
			Baseline: "docker exec of the same command in the Sandbox's container",
			Figures: append(startupFigures(dockside, baseline, tc.goal),
				figure{Name: "API writes (dockside.dev) per Execution", Unit: "writes", Dockside: perRound(after.docksideWrites - before.docksideWrites),
					Note: "the client's create and delete included"},
				figure{Name: "API reads (dockside.dev GETs) per Execution", Unit: "reads", Dockside: perRound(after.docksideReads - before.docksideReads),
					Note: "the client's read of the Sandbox included"},
				figure{Name: "driver calls per Execution", Unit: "calls", Dockside: perRound(total(calls)), Note: "by operation: " + describe(calls)}),
		})
	}
}

// expectOutput checks that an Execution succeeded with the output wanted.
func expectOutput(res *execution.Result, err error) func(want string) error {
	return func(want string) error {
		switch {
		case err != nil:
			return err
		case res.Reason != "Completed" || res.Stdout != want:
			return fmt.Errorf("execution %s ended %s (%s) with output %q, want Completed with %q", res.Name, res.Reason, res.Message, res.Stdout, want)
		}
		return nil
	}
}
