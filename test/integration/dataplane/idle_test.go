//go:build integration

package dataplane_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
	"github.com/dockside-dev/dockside/internal/topology"
)

// idleFrozen makes a Sandbox on node-a that its agent froze for idleness (spec.idlePauseSeconds): its primary
// frozen through the node's Idle, its status Paused for reason Idle, as the Sandbox reconciler leaves it.
func idleFrozen(ns, name string) *dsv1alpha1.Sandbox {
	GinkgoHelper()
	ctx := context.Background()
	sbx := runningSandbox(ns, name, "node-a", dsv1alpha1.LifecycleRunning)
	n := nodes["node-a"]
	primary := topology.NamesOf(sbx).Primary()
	freeze := func() ([]string, error) { return nil, errors.New("not idle for long enough yet") }
	_, _, _ = n.idle.PauseIfIdle(sbx.UID, time.Hour, freeze) // seen first now: idle from here
	time.Sleep(2 * time.Millisecond)                         // idle for longer than the millisecond asked below
	paused, _, err := n.idle.PauseIfIdle(sbx.UID, time.Millisecond, func() ([]string, error) {
		return []string{primary}, n.driver.PauseContainer(ctx, primary)
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(paused).To(BeTrue())
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sbx), sbx)).To(Succeed())
	sbx.Status.Phase = dsv1alpha1.SandboxPaused
	sbx.Status.Conditions = []metav1.Condition{{
		Type: dsv1alpha1.ConditionPaused, Status: metav1.ConditionTrue, Reason: dsv1alpha1.ReasonIdle,
		Message: "frozen after 5 s without a command", LastTransitionTime: metav1.Now(),
	}}
	Expect(k8s.Status().Update(ctx, sbx)).To(Succeed())
	return sbx
}

// wokenNext is the Sandbox for which node-a's data plane next asked a pass of the Sandbox reconciler (the
// Wake hook of handoff.Idle): after a thaw, the pass that reports it Running; after a lazy start's request,
// the pass that builds it.
func wokenNext() types.NamespacedName {
	GinkgoHelper()
	var key types.NamespacedName
	Eventually(nodes["node-a"].resumed).Should(Receive(&key))
	return key
}

// primaryState is the state of the Sandbox's primary in node-a's daemon.
func primaryState(sbx *dsv1alpha1.Sandbox) dd.ContainerState {
	GinkgoHelper()
	c, err := nodes["node-a"].driver.ObserveContainer(context.Background(), topology.NamesOf(sbx).Primary())
	Expect(err).NotTo(HaveOccurred())
	return c.State
}

var _ = Describe("a Sandbox frozen for idleness", Ordered, func() {
	var ida *rest.Config

	BeforeAll(func() {
		namespace("idle-a")
		ida = userConfig("ida", "dockside-edit", "idle-a")
		nodes["node-a"].driver.SetStreamExecHandler(echoHandler("node-a"))
	})

	It("is thawed by an exec, which then runs in it", func() {
		sbx := idleFrozen("idle-a", "dozy-exec")
		Expect(primaryState(sbx)).To(Equal(dd.StatePaused))
		out, err := execThrough(ida, "websocket", "idle-a", "dozy-exec", "", "hostname")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("on node-a: hostname\n"))
		Expect(primaryState(sbx)).To(Equal(dd.StateRunning))
		Expect(wokenNext()).To(Equal(client.ObjectKeyFromObject(sbx)))
	})

	It("is thawed by a files write, which a Sandbox paused by its spec refuses", func(ctx SpecContext) {
		sbx := idleFrozen("idle-a", "dozy-files")
		conn, err := filesclient.Dial(ctx, ida, filesURL(ida, "idle-a", "dozy-files", url.Values{"path": {"/workspace/note"}, "length": {"2"}}), http.MethodPut)
		Expect(err).NotTo(HaveOccurred())
		Expect(filesclient.Send(conn, strings.NewReader("hi"))).To(Succeed())
		conn.Close()
		Expect(primaryState(sbx)).To(Equal(dd.StateRunning))
		Expect(wokenNext()).To(Equal(client.ObjectKeyFromObject(sbx)))
	})

	It("is thawed by a processes call, and kept awake while its process runs", func() {
		nodes["node-a"].driver.SetStreamExecHandler(waitForSignal)
		DeferCleanup(func() { nodes["node-a"].driver.SetStreamExecHandler(echoHandler("node-a")) })
		sbx := idleFrozen("idle-a", "dozy-proc")
		code, body := processesCall(ida, "POST", "idle-a", "dozy-proc", "?command=sleep&command=300&id=job")
		Expect(code).To(Equal(http.StatusCreated), body)
		Expect(primaryState(sbx)).To(Equal(dd.StateRunning))
		Expect(wokenNext()).To(Equal(client.ObjectKeyFromObject(sbx)))
		paused, _, err := nodes["node-a"].idle.PauseIfIdle(sbx.UID, time.Millisecond, func() ([]string, error) { return nil, nil })
		Expect(err).NotTo(HaveOccurred())
		Expect(paused).To(BeFalse(), "a background process that runs is a use")
		code, body = processesCall(ida, "POST", "idle-a", "dozy-proc", "/job/signal?signal=TERM")
		Expect(code).To(Equal(http.StatusOK), body)
	})
})
