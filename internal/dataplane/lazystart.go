package dataplane

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

const (
	// startPoll is how often a call waiting for a lazy start reads the Sandbox again (from the agent's
	// cache, so a read costs no API call).
	startPoll = 50 * time.Millisecond
	// startReportGrace is how long past the startup deadline a call waits for the agent to report the
	// start's failure, which names what was slow.
	startReportGrace = 10 * time.Second
)

// awaitStart asks for the start of a lazy Sandbox that has not started (spec.start: Lazy,
// docs/design/lazy-start.md) and waits until it is Ready and built, until it fails (the call is refused with
// its reason), or until its startup deadline has passed; sbx follows the Sandbox. The start is the Sandbox
// reconciler's, as any start: this only asks for it (handoff.Idle.Start) and reads the status it writes.
func (s *Server) awaitStart(ctx context.Context, sbx *dsv1alpha1.Sandbox) *refusal {
	key := client.ObjectKeyFromObject(sbx)
	s.opts.Idle.Start(key, sbx.UID)
	limit := dsv1alpha1.StartupDeadline(sbx) + startReportGrace
	deadline := time.Now().Add(limit)
	for {
		ready := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionReady)
		switch {
		case status.IsTrue(sbx, dsv1alpha1.ConditionStalled) && ready != nil:
			return &refusal{http.StatusConflict, metav1.StatusReasonConflict,
				fmt.Sprintf("Sandbox %q (spec.start: Lazy) did not start: %s: %s", sbx.Name, ready.Reason, ready.Message)}
		case dsv1alpha1.LazyUnstarted(sbx):
		case ready != nil && ready.Status == metav1.ConditionTrue, sbx.DeletionTimestamp != nil, sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused:
			return nil // started, or what the call meets now is runnable's to say
		}
		if time.Now().After(deadline) {
			return &refusal{http.StatusGatewayTimeout, metav1.StatusReasonTimeout,
				fmt.Sprintf("Sandbox %q (spec.start: Lazy) did not start within %s; its status says why", sbx.Name, limit)}
		}
		select {
		case <-ctx.Done():
			return &refusal{http.StatusConflict, metav1.StatusReasonConflict, fmt.Sprintf("the call ended while Sandbox %q started", sbx.Name)}
		case <-time.After(startPoll):
		}
		fresh := &dsv1alpha1.Sandbox{}
		switch err := s.opts.Client.Get(ctx, key, fresh); {
		case apierrors.IsNotFound(err) || (err == nil && fresh.UID != sbx.UID):
			return &refusal{http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("Sandbox %q was deleted while it started", sbx.Name)}
		case err == nil:
			*sbx = *fresh
		}
	}
}
