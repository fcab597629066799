//go:build integration

package dataplane_test

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// lazyUnstarted makes a Sandbox on node-a that starts lazily (spec.start: Lazy) and has not started: bound,
// Ready with reason Lazy, with nothing in the node's daemon, as the Sandbox reconciler leaves it.
func lazyUnstarted(ns, name string) *dsv1alpha1.Sandbox {
	GinkgoHelper()
	ctx := context.Background()
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.SandboxSpec{Image: image, NodeName: "node-a", Start: dsv1alpha1.StartLazy, StartupDeadlineSeconds: 30},
	}
	Expect(k8s.Create(ctx, sbx)).To(Succeed())
	setOutcome(sbx, dsv1alpha1.SandboxPending, dsv1alpha1.ReasonLazy, true, false)
	return sbx
}

// setOutcome writes the Sandbox's phase and its Ready, Reconciling and Stalled conditions for one reason, as
// the Sandbox reconciler does at the end of a pass.
func setOutcome(sbx *dsv1alpha1.Sandbox, phase dsv1alpha1.SandboxPhase, reason string, ready, stalled bool) {
	GinkgoHelper()
	ctx := context.Background()
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sbx), sbx)).To(Succeed())
	word := map[bool]metav1.ConditionStatus{true: metav1.ConditionTrue, false: metav1.ConditionFalse}
	sbx.Status.NodeName, sbx.Status.Phase, sbx.Status.ObservedGeneration = "node-a", phase, sbx.Generation
	if phase != dsv1alpha1.SandboxPending {
		sbx.Status.TopologyGeneration = 1 // recorded as the start begins
	}
	sbx.Status.Conditions = nil
	for typ, is := range map[string]bool{dsv1alpha1.ConditionReady: ready, dsv1alpha1.ConditionReconciling: !ready && !stalled, dsv1alpha1.ConditionStalled: stalled} {
		sbx.Status.Conditions = append(sbx.Status.Conditions, metav1.Condition{
			Type: typ, Status: word[is], Reason: reason, Message: "as the test's agent says", LastTransitionTime: metav1.Now(),
		})
	}
	Expect(k8s.Status().Update(ctx, sbx)).To(Succeed())
}

// inBackground makes call in a goroutine of its own; its result arrives on the channel.
func inBackground[T any](call func() T) <-chan T {
	done := make(chan T, 1)
	go func() {
		defer GinkgoRecover()
		done <- call()
	}()
	return done
}

var _ = Describe("a Sandbox that starts lazily", Ordered, func() {
	var lea *rest.Config

	BeforeAll(func() {
		namespace("lazy-a")
		lea = userConfig("lea", "dockside-edit", "lazy-a")
		nodes["node-a"].driver.SetStreamExecHandler(echoHandler("node-a"))
	})

	It("is started by its first exec, which waits for the start and then runs", func() {
		sbx := lazyUnstarted("lazy-a", "sleepy")
		type result struct {
			out string
			err error
		}
		done := inBackground(func() result {
			out, err := execThrough(lea, "websocket", "lazy-a", "sleepy", "", "hostname")
			return result{out, err}
		})
		Expect(wokenNext()).To(Equal(client.ObjectKeyFromObject(sbx)))
		Expect(nodes["node-a"].idle.StartAsked(sbx.UID)).To(BeTrue())
		setOutcome(sbx, dsv1alpha1.SandboxStarting, dsv1alpha1.ReasonCreating, false, false)
		Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "the exec waits while the Sandbox starts")

		buildPrimary(sbx, "node-a") // of the generation the start recorded
		setOutcome(sbx, dsv1alpha1.SandboxRunning, dsv1alpha1.ReasonRunning, true, false)
		var got result
		Eventually(done).WithTimeout(30 * time.Second).Should(Receive(&got))
		Expect(got.err).NotTo(HaveOccurred())
		Expect(got.out).To(Equal("on node-a: hostname\n"))
		Expect(nodes["node-a"].resumed).NotTo(Receive(), "the start was asked for once")
	})

	It("refuses its first call with the reason its start failed", func() {
		sbx := lazyUnstarted("lazy-a", "doomed")
		type result struct {
			code int
			body string
		}
		done := inBackground(func() result {
			code, body := processesCall(lea, "POST", "lazy-a", "doomed", "?command=true&id=job")
			return result{code, body}
		})
		Expect(wokenNext()).To(Equal(client.ObjectKeyFromObject(sbx)))
		setOutcome(sbx, dsv1alpha1.SandboxFailed, dsv1alpha1.ReasonImageNotPresent, false, true)
		var got result
		Eventually(done).WithTimeout(30 * time.Second).Should(Receive(&got))
		Expect(got.code).To(Equal(http.StatusConflict), got.body)
		Expect(statusMessage(got.body)).To(And(ContainSubstring("did not start"), ContainSubstring("ImageNotPresent")))
	})
})
