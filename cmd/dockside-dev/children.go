package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// child is a process the run starts after the control plane (the agent, the E2B gateway) and stops before it.
type child struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited, err then says how
	err    error
}

// startChild starts argv with KUBECONFIG pointing at the run's control plane, its output on the run's own.
func startChild(name, kubeconfig string, argv []string) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	fmt.Fprintf(os.Stderr, ">> starting %s: %v\n", name, argv)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// waitChildren returns when the run is interrupted (nil) or when one of the children exits on its own (an error
// naming it); the caller then stops the others. Without children it waits for the interruption.
func waitChildren(ctx context.Context, procs []*child) error {
	first := make(chan *child, len(procs))
	for _, c := range procs {
		go func() {
			select {
			case <-c.exited:
				first <- c
			case <-ctx.Done():
			}
		}()
	}
	select {
	case c := <-first:
		if ctx.Err() != nil {
			// Ctrl-C reaches the whole process group: a child that stopped on it is no failure.
			return nil
		}
		if c.err == nil {
			return fmt.Errorf("%s exited", c.name)
		}
		return fmt.Errorf("%s exited: %w", c.name, c.err)
	case <-ctx.Done():
		return nil
	}
}

// stopChildren stops the children in order, each with SIGTERM and then, after 20 s, SIGKILL.
func stopChildren(procs []*child) {
	for _, c := range procs {
		select {
		case <-c.exited:
			continue
		default:
		}
		fmt.Fprintln(os.Stderr, ">> stopping", c.name)
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(20 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	}
}
