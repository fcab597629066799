package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestWaitChildrenNamesTheOneThatExited(t *testing.T) {
	sleeper, err := startChild("the sleeper", "k", []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	quitter, err := startChild("the quitter", "k", []string{"sh", "-c", "exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	procs := []*child{sleeper, quitter}
	t.Cleanup(func() { stopChildren(procs) })
	err = waitChildren(context.Background(), procs)
	if err == nil || !strings.Contains(err.Error(), "the quitter exited: exit status 3") {
		t.Fatalf("waitChildren = %v, want the quitter's exit", err)
	}
	stopChildren(procs)
	select {
	case <-sleeper.exited:
	default:
		t.Fatal("stopChildren returned with the sleeper still running")
	}
}

func TestWaitChildrenReturnsOnInterrupt(t *testing.T) {
	sleeper, err := startChild("the sleeper", "k", []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	procs := []*child{sleeper}
	t.Cleanup(func() { stopChildren(procs) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := waitChildren(ctx, procs); err != nil {
		t.Fatalf("an interrupted run returns nil, got %v", err)
	}
	start := time.Now()
	stopChildren(procs)
	// SIGTERM ends sleep; the 20 s SIGKILL fallback was not needed.
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("stopping took %v", took)
	}
	if sleeper.cmd.ProcessState == nil || sleeper.cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("sleep was not ended by a signal: %v", sleeper.cmd.ProcessState)
	}
}
