package egress

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestRefusalEventsAreOnePerSandboxPerPeriodAndCountTheRest(t *testing.T) {
	g := NewWithT(t)
	sbx := sandboxOf("agent", "uid-1", dsv1alpha1.NetworkIsolated)
	scheme := runtime.NewScheme()
	g.Expect(dsv1alpha1.AddToScheme(scheme)).To(Succeed())
	recorder := events.NewFakeRecorder(10)
	e := &RefusalEvents{
		reader:   clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(sbx).Build(),
		recorder: recorder, every: time.Hour, last: map[types.NamespacedName]time.Time{},
	}
	src := Source{Namespace: "team", Name: "agent"}
	refusal := &Refusal{Reason: ReasonNotAllowed, Message: "not on this Sandbox's network.allow list"}
	for range 5 {
		e.Record(src, true, "evil.example:443", refusal)
	}
	e.Record(Source{}, false, "evil.example:443", refusal)
	g.Expect(recorder.Events).To(HaveLen(1), "one Event for five refusals within the period; none for an unknown source")
	ev := <-recorder.Events
	g.Expect(ev).To(ContainSubstring("EgressRefused"))
	g.Expect(ev).To(ContainSubstring("evil.example:443"))
	g.Expect(strings.Contains(ev, "1 refusal(s)")).To(BeTrue(), ev)

	e.last[types.NamespacedName{Namespace: "team", Name: "agent"}] = time.Now().Add(-2 * time.Hour)
	e.Record(src, true, "evil.example:443", refusal)
	g.Expect(<-recorder.Events).To(ContainSubstring("5 refusal(s)"), "the four held back and this one")
}
