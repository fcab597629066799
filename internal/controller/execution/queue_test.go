package execution

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// A waiting Execution names the one just before it, which stays the same as the queue moves on (so its status
// is written once), and a turn of the queue brings a pass for the first waiting one only.
func TestAQueueNamesTheOneBeforeAndWakesTheFirst(t *testing.T) {
	g := NewWithT(t)
	w := newFreezeWorld(t, nil)
	ctx := context.Background()
	at := time.Now().Add(-time.Minute)
	running := w.get(g)
	running.Status.Phase = dsv1alpha1.ExecutionRunning
	g.Expect(w.api.Status().Update(ctx, running)).To(Succeed())
	for i, name := range []string{"f", "g", "h"} {
		ex := w.ex.DeepCopy()
		ex.ResourceVersion, ex.Name, ex.UID = "", name, types.UID(name+"-uid")
		ex.CreationTimestamp = metav1.NewTime(at.Add(time.Duration(i+1) * time.Second))
		g.Expect(w.api.Create(ctx, ex)).To(Succeed())
	}
	ahead := func(name string) string {
		ex := &dsv1alpha1.Execution{}
		g.Expect(w.api.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, ex)).To(Succeed())
		first, err := w.r.ahead(ctx, ex, w.sbx)
		g.Expect(err).NotTo(HaveOccurred())
		return first
	}
	g.Expect(ahead("f")).To(Equal("e"), "the one running")
	g.Expect(ahead("g")).To(Equal("f"))
	g.Expect(ahead("h")).To(Equal("g"))

	running = w.get(g)
	running.Status.Phase = dsv1alpha1.ExecutionSucceeded
	g.Expect(w.api.Status().Update(ctx, running)).To(Succeed())
	g.Expect(ahead("f")).To(BeEmpty(), "first now")
	g.Expect(ahead("h")).To(Equal("g"), "unchanged by the turn")

	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	w.r.enqueueFirst(ctx, q, "ns", "s")
	g.Expect(q.Len()).To(Equal(1))
	req, _ := q.Get()
	g.Expect(req.Name).To(Equal("f"))
}
