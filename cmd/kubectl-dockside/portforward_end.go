package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// forwardEndReads is how many times forwardEnd reads the Sandbox while it looks unchanged, pollInterval apart:
// a roll removes the containers first and records the new generation in status a moment later.
const forwardEndReads = 6

// forwardEnd says why a forward's session was lost, as kubectl port-forward ends when its pod goes: the agent
// ends the session of a Sandbox deleted or rebuilt (docs/design/dataplane.md, "Calls end with their
// Sandbox"), so the Sandbox is read again to say which. was is the Sandbox as it was when the forward began,
// nil when it could not be read (c nil: no client).
func forwardEnd(ctx context.Context, c client.Client, key client.ObjectKey, was *dsv1alpha1.Sandbox) error {
	if c == nil {
		return fmt.Errorf("lost the connection to sandbox %q", key.Name)
	}
	for range forwardEndReads {
		now := &dsv1alpha1.Sandbox{}
		err := c.Get(ctx, key, now)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("sandbox %q was deleted", key.Name)
		case err != nil:
			return fmt.Errorf("lost the connection to sandbox %q (reading it again: %w)", key.Name, err)
		case now.DeletionTimestamp != nil || (was != nil && now.UID != was.UID):
			return fmt.Errorf("sandbox %q was deleted", key.Name)
		case was != nil && now.Status.TopologyGeneration > was.Status.TopologyGeneration:
			return fmt.Errorf("sandbox %q was rebuilt (topology generation %d replaced %d)", key.Name, now.Status.TopologyGeneration, was.Status.TopologyGeneration)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lost the connection to sandbox %q", key.Name)
		case <-time.After(pollInterval):
		}
	}
	return fmt.Errorf("lost the connection to sandbox %q", key.Name)
}
