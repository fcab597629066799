package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/rest"
)

// newProcessID names an exec in the Sandbox's process list (process=ID), so that a signal can reach it
// without a terminal (docs/design/dataplane.md, "Signals and background processes").
func newProcessID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "kubectl-" + hex.EncodeToString(b[:])
}

// forwardInterrupts sends SIGINT to the exec's process group through the processes subresource each time the
// plugin gets one (Ctrl-C without a terminal), until ctx ends. When the signal cannot be sent, it ends the
// stream instead (stop), which ends the command too.
func forwardInterrupts(ctx context.Context, cfg *rest.Config, ns, sandbox, id string, stop context.CancelFunc) {
	ints := make(chan os.Signal, 1)
	signal.Notify(ints, syscall.SIGINT)
	go func() {
		defer signal.Stop(ints)
		c, made := newProcessesClient(cfg, ns, sandbox)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ints:
				err := made
				if err == nil {
					_, err = c.signal(ctx, id, "INT")
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "kubectl dockside exec: forwarding Ctrl-C: %v; ending the command\n", err)
					stop()
				}
			}
		}
	}()
}
