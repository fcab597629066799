package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/portforward"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/dataplane/forwardclient"
)

const portForwardUsage = `Usage: kubectl dockside port-forward [flags] SANDBOX [SERVICE:]PORT [LOCAL]

Forwards LOCAL (default: PORT) on this machine's loopback to PORT of the Sandbox's primary container, or of
its instance of the SandboxService SERVICE, through the API server (subresources.dockside.dev,
docs/design/dataplane.md), as kubectl port-forward does for a pod, until interrupted. The container needs a
network (a Sandbox of network mode None has no port to reach; its services always do). Like kubectl, it
tunnels SPDY through a WebSocket first and falls back to plain SPDY; KUBECTL_PORT_FORWARD_WEBSOCKETS=false
goes straight to SPDY.
The forward ends, as kubectl's does when its pod goes, when the Sandbox is deleted or rebuilt (a roll of its
topology): every new connection reaches the container the forward began with, or none.
Exit codes: 0 interrupted after forwarding, 1 the forward failed or ended (the message says why: "sandbox
NAME was deleted", "was rebuilt"), 2 usage.
`

func portForwardVerb() verb {
	k := &kubeFlags{}
	address := "127.0.0.1"
	return verb{
		usage: portForwardUsage, minArgs: 2, maxArgs: 3,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			fs.StringVar(&address, "address", address, "local address to listen on")
		},
		run: func(ctx context.Context, args []string) error {
			service, remote, local, err := forwardSpec(args[1:])
			if err != nil {
				return usageError("%v", err)
			}
			return portForward(ctx, k, args[0], service, address, remote, local)
		},
	}
}

// forwardSpec reads [SERVICE:]PORT [LOCAL].
func forwardSpec(args []string) (service string, remote, local int, err error) {
	port := args[0]
	if svc, p, ok := strings.Cut(port, ":"); ok {
		service, port = svc, p
	}
	if remote, err = portNumber(port); err != nil {
		return "", 0, 0, err
	}
	local = remote
	if len(args) == 2 {
		if local, err = portNumber(args[1]); err != nil {
			return "", 0, 0, err
		}
	}
	return service, remote, local, nil
}

func portNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port (1 to 65535)", s)
	}
	return n, nil
}

// portForward forwards until ctx ends (Ctrl-C), over the connection kubectl port-forward makes.
func portForward(ctx context.Context, k *kubeFlags, sandbox, service, address string, remote, local int) error {
	cfg, ns, err := k.config()
	if err != nil {
		return err
	}
	u, err := subresourceURL(cfg, ns, sandbox, "portforward")
	if err != nil {
		return err
	}
	if service != "" {
		u.RawQuery = url.Values{"service": {service}}.Encode()
	}
	// As kubectl: SPDY tunnelled through a WebSocket, unless KUBECTL_PORT_FORWARD_WEBSOCKETS is false.
	dialer, err := forwardclient.Dialer(cfg, u, !strings.EqualFold(os.Getenv("KUBECTL_PORT_FORWARD_WEBSOCKETS"), "false"))
	if err != nil {
		return fmt.Errorf("port-forward to %s: %w", sandbox, err)
	}
	c, was := sandboxNow(ctx, k, client.ObjectKey{Namespace: ns, Name: sandbox})
	ready := make(chan struct{})
	fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{address}, []string{fmt.Sprintf("%d:%d", local, remote)}, ctx.Done(), ready, os.Stdout, os.Stderr)
	if err != nil {
		return fmt.Errorf("listening on %s:%d: %w", address, local, err)
	}
	err = fw.ForwardPorts()
	switch {
	case errors.Is(err, portforward.ErrLostConnectionToPod) && ctx.Err() == nil:
		return fmt.Errorf("%w: the forward from %s:%d ended", forwardEnd(ctx, c, client.ObjectKey{Namespace: ns, Name: sandbox}, was), address, local)
	case err != nil:
		return fmt.Errorf("forwarding %s:%d: %w", address, local, err)
	}
	return nil
}

// sandboxNow is a client and the Sandbox as it is when the forward begins, which forwardEnd compares with;
// either is nil when it cannot be had (a user may forward ports without reading Sandboxes): the forward goes
// on, and its end says less.
func sandboxNow(ctx context.Context, k *kubeFlags, key client.ObjectKey) (client.Client, *dsv1alpha1.Sandbox) {
	c, _, err := k.client()
	if err != nil {
		return nil, nil
	}
	sbx := &dsv1alpha1.Sandbox{}
	if err := c.Get(ctx, key, sbx); err != nil {
		return c, nil
	}
	return c, sbx
}
