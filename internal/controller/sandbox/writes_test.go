package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// TestColdStartWrites counts the API writes of a session's way to Ready, its holder started after: one write
// to take it (an agent binds and admits in one patch; a Sandbox its author bound is only admitted) and one
// status write, from the pass that records the first topology generation and builds it. make bench reports
// the same count against a real API server ("API writes per cold start"), its create included.
func TestColdStartWrites(t *testing.T) {
	for name, sbx := range map[string]*dsv1alpha1.Sandbox{
		"bound by the agent":  unbound(newSandbox("s")),
		"bound by its author": bound(newSandbox("s")),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			h := newHarness(t, sbx)
			h.apiWrites() // the objects the fake API server starts from

			got := h.passUntil(g, sbx, 3, isReady)
			h.holderPass(g, got)

			g.Expect(h.apiWrites()).To(Equal([]string{"patch Sandbox", "patch Sandbox/status"}))
		})
	}
}
