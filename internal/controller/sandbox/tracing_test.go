package sandbox

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/dockerdriver/metered"
	"github.com/dockside-dev/dockside/internal/testutil/recorder"
	"github.com/dockside-dev/dockside/internal/testutil/spans"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// A start is one trace over its passes (bind, then build, then each readiness check), recorded whole when the
// Sandbox is Ready, and a deletion another; Docker calls are children of the step that made them, and a pass
// over a Sandbox at rest is not traced (docs/design/tracing.md).
func TestAStartAndADeletionAreOneTraceEach(t *testing.T) {
	g := NewWithT(t)
	collect := spans.Collect(t)
	sbx := newSandbox("python", withServices("redis"), func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.NodeName, sbx.Finalizers = "", nil })
	h := newHarness(t, newService("redis", withReadiness(3)), sbx)
	h.r.Driver = metered.Wrap(h.r.Driver, 0)

	got := h.passUntil(g, sbx, 8, isReady)
	start := tracing.Root(traceStart, string(got.UID), 1)
	exported := collect()
	tree := spans.TreeOf(exported)
	roots := spans.Named(exported, "sandbox.start")
	g.Expect(roots).To(HaveLen(1), "the root is recorded once, when the start is over")
	g.Expect(roots[0].SpanContext.SpanID()).To(Equal(start.SpanID()))
	passes := spans.Named(exported, "sandbox.pass")
	g.Expect(len(passes)).To(BeNumerically(">=", 2), "bind, then build")
	g.Expect(tree.Parents(exported, "sandbox.admission")).To(BeEmpty(), "admitted by its bind")
	for _, p := range passes {
		g.Expect(p.SpanContext.TraceID()).To(Equal(start.TraceID()))
		g.Expect(p.Parent.SpanID()).To(Equal(start.SpanID()))
	}
	g.Expect(tree.Parents(exported, "sandbox.bind")).To(ConsistOf("sandbox.pass"))
	g.Expect(tree.Parents(exported, "sandbox.ensureImages")).To(ContainElement("sandbox.pass"))
	g.Expect(tree.Parents(exported, "sandbox.service")).To(ContainElement("sandbox.ensureServices"))
	g.Expect(tree.Parents(exported, "sandbox.service.readiness")).To(ContainElement("sandbox.service"))
	g.Expect(tree.Parents(exported, "docker.StartContainer")).To(ContainElements("sandbox.service", "sandbox.ensurePrimary"))

	got = h.holderPass(g, got)
	_, err := h.pass(got) // at rest
	g.Expect(err).NotTo(HaveOccurred())
	// Another finalizer keeps the Sandbox after the agent let go of its own, as the watch may show it for a
	// moment after the last one is gone: the passes over it then are not part of the deletion.
	got = h.get(got)
	got.Finalizers = append(got.Finalizers, "example.com/keep")
	g.Expect(h.client.Update(h.ctx, got)).To(Succeed())
	g.Expect(h.client.Delete(h.ctx, got)).To(Succeed())
	for range 3 {
		_, err = h.pass(got)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(cleanedUp(h.get(got))).To(BeTrue())
	exported = collect()
	tree = spans.TreeOf(exported)
	deletion := tracing.Root(traceDeletion, string(got.UID), 0)
	g.Expect(spans.Named(exported, "sandbox.deletion")).To(HaveLen(1))
	g.Expect(spans.Named(exported, "sandbox.deletion")[0].SpanContext.SpanID()).To(Equal(deletion.SpanID()))
	g.Expect(tree.Parents(exported, "docker.RemoveContainer")).To(ContainElement("sandbox.pass"))
	for _, s := range exported {
		if s.Name == "docker.RemoveContainer" {
			g.Expect(s.SpanContext.TraceID()).To(Equal(deletion.TraceID()), "every removal is in the deletion's trace")
		}
	}
	var elsewhere []string
	for _, s := range exported {
		if s.SpanContext.TraceID() != start.TraceID() && s.SpanContext.TraceID() != deletion.TraceID() {
			elsewhere = append(elsewhere, s.Name)
		}
	}
	g.Expect(elsewhere).To(BeEmpty(), "the passes at rest (the holder's, the one after it) are not traced")
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.SandboxRunning))
}

// The node's cache may show a Sandbox as it was before the API server's last change to it: a pass over such a
// read releases nothing, so it records no deletion root (docs/design/tracing.md). Conflict: someone changed the
// Sandbox after the read, the pass's finalizer patch is refused, and a later pass releases it. Not found: the
// pass that released it already recorded the root, and the cache has not yet seen the Sandbox go (a Docker
// event of the removals brings the next pass at once).
func TestAStaleReadRecordsNoDeletionRoot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stale    func(h *harness, sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox // the read a pass gets, after the deletion
		released int                                                           // fresh passes before the stale one (one lets the Sandbox go)
	}{
		{"conflict", func(h *harness, sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
			stale := h.get(sbx)
			changed := h.get(sbx)
			changed.Annotations = map[string]string{"example.com/touched": "yes"}
			h.noErr(h.client.Update(h.ctx, changed))
			return stale
		}, 0},
		{"not found", func(h *harness, sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
			return h.get(sbx)
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			collect := spans.Collect(t)
			sbx := newSandbox("python")
			h := newHarness(t, sbx)
			h.passUntil(g, sbx, 8, isReady)
			g.Expect(h.client.Delete(h.ctx, h.get(sbx))).To(Succeed())
			stale := tc.stale(h, sbx)
			recorder.Drain(h.events)

			fresh := h.r.Client
			for range tc.released {
				_, err := h.pass(sbx)
				g.Expect(err).NotTo(HaveOccurred())
			}
			h.r.Client = staleReads{Client: fresh, sbx: stale}
			_, err := h.pass(sbx)
			g.Expect(err).NotTo(HaveOccurred())
			h.r.Client = fresh
			for h.get(sbx) != nil {
				_, err = h.pass(sbx)
				g.Expect(err).NotTo(HaveOccurred())
			}

			g.Expect(len(spans.Named(collect(), "sandbox.deletion"))).To(Equal(1), "one root, from the pass that released the Sandbox")
			g.Expect(recorder.Drain(h.events)).To(Equal([]string{"Normal " + EventCleanedUp}))
		})
	}
}

// staleReads is the node's cache behind the API server: it reads the Sandbox as sbx.
type staleReads struct {
	client.Client
	sbx *dsv1alpha1.Sandbox
}

func (c staleReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if s, ok := obj.(*dsv1alpha1.Sandbox); ok && key == client.ObjectKeyFromObject(c.sbx) {
		c.sbx.DeepCopyInto(s)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
