package fake_test

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"testing"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/conformance"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// TestConformance holds the fake to the behaviours the real driver shows on a real daemon.
func TestConformance(t *testing.T) {
	f := newFake()
	// The one command the behaviours exec is conformance.SleepCommand, which does not end by itself.
	f.SetExecHandler(func(ctx context.Context, _ string, _ dd.ExecRequest) fake.ExecOutput {
		<-ctx.Done()
		return fake.ExecOutput{}
	})
	// Streamed execs play conformance.StreamCommand as sh would, and anything else as SleepCommand.
	f.SetStreamExecHandler(func(ctx context.Context, _ string, req dd.StreamExecRequest) int {
		if !slices.Equal(req.Command, conformance.StreamCommand) {
			<-ctx.Done()
			return 137
		}
		fmt.Fprintln(req.Stdout, "ready")
		line, _ := bufio.NewReader(req.Stdin).ReadString('\n')
		fmt.Fprint(req.Stderr, "got:"+line)
		return 3
	})
	squat := map[conformance.Object]func(string){
		conformance.Container: f.AddForeignContainer,
		conformance.Network:   f.AddForeignNetwork,
		conformance.Volume:    f.AddForeignVolume,
	}
	ensure := map[conformance.Object]fake.Op{
		conformance.Container: fake.OpEnsureContainer,
		conformance.Network:   fake.OpEnsureNetwork,
		conformance.Volume:    fake.OpEnsureVolume,
	}
	conformance.Run(t, conformance.Harness{
		Driver:         f,
		Image:          image,
		Squat:          func(_ conformance.T, kind conformance.Object, name string) { squat[kind](name) },
		LoseNextEnsure: func(kind conformance.Object) { f.LoseNextResponse(ensure[kind]) },
	})
}
