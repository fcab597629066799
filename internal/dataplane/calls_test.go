package dataplane

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// boxAt is Sandbox ns/box of uid at a topology generation, its primary's container recorded as container.
func boxAt(uid types.UID, generation int64, container string) *dsv1alpha1.Sandbox {
	return &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "box", UID: uid},
		Status: dsv1alpha1.SandboxStatus{TopologyGeneration: generation, ContainerID: container,
			Services: []dsv1alpha1.ServiceInstanceStatus{{Name: "db", ContainerID: "db-" + container}}},
	}
}

// A call ends, with a cause that says why, when the watch shows its Sandbox deleted or rebuilt, and only then.
func TestCallsEndWithTheirSandbox(t *testing.T) {
	now := metav1.Now()
	deleting := boxAt("u1", 2, "c1")
	deleting.DeletionTimestamp = &now
	for _, tc := range []struct {
		name    string
		service string
		event   func(*callRegistry)
		why     string // "" the call goes on
	}{
		{name: "deleted", event: func(c *callRegistry) { c.gone(boxAt("u1", 2, "c1")) }, why: `sandbox "box" was deleted`},
		{name: "being deleted", event: func(c *callRegistry) { c.seen(deleting) }, why: `sandbox "box" was deleted`},
		{name: "rolled", event: func(c *callRegistry) { c.seen(boxAt("u1", 3, "")) }, why: `sandbox "box" was rebuilt (topology generation 3 replaced 2)`},
		{name: "its container replaced", event: func(c *callRegistry) { c.seen(boxAt("u1", 2, "c2")) }, why: `sandbox "box" was rebuilt (its container was replaced)`},
		{name: "its service's container replaced", service: "db", event: func(c *callRegistry) { c.seen(boxAt("u1", 2, "c2")) }, why: `sandbox "box" was rebuilt (its container was replaced)`},
		{name: "another update", event: func(c *callRegistry) { c.seen(boxAt("u1", 2, "c1")) }},
		{name: "an older read", event: func(c *callRegistry) { c.seen(boxAt("u1", 1, "c0")) }},
		{name: "no container recorded", event: func(c *callRegistry) { c.seen(boxAt("u1", 2, "")) }},
		{name: "another Sandbox of the name deleted", event: func(c *callRegistry) { c.gone(boxAt("u0", 2, "c1")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			calls := newCallRegistry()
			ctx, cl := calls.enter(t.Context(), identityOf(boxAt("u1", 2, "c1"), tc.service))
			tc.event(calls)
			if tc.why == "" {
				g.Expect(ctx.Err()).NotTo(HaveOccurred())
			} else {
				g.Expect(ctx.Err()).To(HaveOccurred())
				var gone *sandboxGone
				g.Expect(errors.As(context.Cause(ctx), &gone)).To(BeTrue())
				g.Expect(gone.Error()).To(Equal(tc.why))
			}
			calls.leave(cl)
			g.Expect(calls.open).To(BeEmpty(), "a call left is forgotten")
			g.Expect(ctx.Err()).To(HaveOccurred(), "and its context released")
		})
	}
}

// A call looked up before its Sandbox's deletion and entered after the event ends at once.
func TestACallEnteredAfterTheDeletionEnds(t *testing.T) {
	g := NewWithT(t)
	calls := newCallRegistry()
	calls.gone(boxAt("u1", 2, "c1"))
	ctx, cl := calls.enter(t.Context(), identityOf(boxAt("u1", 2, "c1"), ""))
	defer calls.leave(cl)
	g.Expect(context.Cause(ctx)).To(MatchError(`sandbox "box" was deleted`))
	other, cl2 := calls.enter(t.Context(), identityOf(boxAt("u2", 1, "c9"), ""))
	defer calls.leave(cl2)
	g.Expect(other.Err()).NotTo(HaveOccurred(), "a Sandbox made again under the name is another")
}

// An exec ends when its Sandbox is deleted or rebuilt, over either protocol, and its client reads why.
func TestExecEndsWithItsSandbox(t *testing.T) {
	for _, protocol := range []string{"websocket", "spdy"} {
		for event, why := range map[string]string{"delete": `sandbox "sbx" was deleted`, "roll": `sandbox "sbx" was rebuilt (topology generation 2 replaced 1)`} {
			t.Run(protocol+"/"+event, func(t *testing.T) {
				g := NewWithT(t)
				d, container := runningPrimary(t)
				started := make(chan struct{})
				d.SetStreamExecHandler(func(ctx context.Context, _ string, _ dd.StreamExecRequest) int {
					close(started)
					<-ctx.Done()
					return 0
				})
				s, informer := watchingServer(t, d, primarySandbox())
				srv := serveTracked(t, s, primarySandbox(), Exec, func(w http.ResponseWriter, r *http.Request) {
					serveExec(w, r, executor{driver: d}, container)
				})
				done := make(chan error, 1)
				go func() { done <- execOver(t.Context(), protocol, srv.URL) }()
				g.Eventually(started, 30*time.Second).Should(BeClosed())
				if event == "delete" {
					informer.Delete(primarySandbox())
				} else {
					rolled := primarySandbox()
					rolled.Status.TopologyGeneration = 2
					informer.Update(primarySandbox(), rolled)
				}
				var err error
				g.Eventually(done, 30*time.Second).Should(Receive(&err))
				g.Expect(err).To(MatchError(ContainSubstring(why)))
			})
		}
	}
}
