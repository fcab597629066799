package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
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
		for {
			select {
			case <-ctx.Done():
				return
			case <-ints:
				if err := sendSignal(ctx, cfg, ns, sandbox, id, "INT"); err != nil {
					fmt.Fprintf(os.Stderr, "kubectl dockside exec: forwarding Ctrl-C: %v; ending the command\n", err)
					stop()
				}
			}
		}
	}()
}

// sendSignal is POST .../sandboxes/SANDBOX/processes/ID/signal?signal=SIG.
func sendSignal(ctx context.Context, cfg *rest.Config, ns, sandbox, id, sig string) error {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return fmt.Errorf("the API server's address: %w", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("making the API client: %w", err)
	}
	u := base.JoinPath("apis/subresources.dockside.dev/v1alpha1/namespaces", ns, "sandboxes", sandbox, "processes", id, "signal")
	u.RawQuery = "signal=" + sig
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return fmt.Errorf("making the request: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("signalling: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
