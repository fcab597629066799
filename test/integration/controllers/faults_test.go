//go:build integration

package controllers_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

// stubbornDocker is the fake daemon with a twist: while uncertain is set, removing anything answers
// Uncertain without removing it, as when the daemon's answer is lost and the removal may not have happened.
// It also records the order of removals.
type stubbornDocker struct {
	*fake.Driver
	uncertain atomic.Bool
	mu        sync.Mutex
	removed   []string // role, or "network"/"volume", in removal order
}

func (d *stubbornDocker) RemoveContainer(ctx context.Context, name string) error {
	if d.uncertain.Load() {
		return dd.NewError(dd.KindUncertain, dd.PhaseRemove, name, "the outcome is unknown")
	}
	if c, err := d.ObserveContainer(ctx, name); err == nil && c.Exists {
		_, role, svc := dd.OwnerFromLabels(c.Labels)
		d.record(role + svc)
	}
	return d.Driver.RemoveContainer(ctx, name)
}

func (d *stubbornDocker) RemoveNetwork(ctx context.Context, name string) error {
	if d.uncertain.Load() {
		return dd.NewError(dd.KindUncertain, dd.PhaseRemove, name, "the outcome is unknown")
	}
	d.record("network")
	return d.Driver.RemoveNetwork(ctx, name)
}

func (d *stubbornDocker) RemoveVolume(ctx context.Context, name string) error {
	d.record("volume")
	return d.Driver.RemoveVolume(ctx, name)
}

func (d *stubbornDocker) record(what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.removed = append(d.removed, what)
}

func (d *stubbornDocker) removals() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.removed...)
}

// newStubbornAgent starts an agent whose driver is a stubbornDocker.
func newStubbornAgent() (*testAgent, *stubbornDocker) {
	node := newNode()
	stubborn := &stubbornDocker{Driver: newDocker(node)}
	a := startAgent(node, stubborn.Driver, func(o *agent.Options) { o.Driver = stubborn })
	return a, stubborn
}

// waitIdle waits until the agent has stopped looking at Docker (no pass for a while), so that what a spec
// does next is seen only through the path under test.
func waitIdle(a *testAgent) {
	GinkgoHelper()
	last := -1
	Eventually(func() bool {
		n := a.docker.Calls(fake.OpListContainers)
		idle := n == last
		last = n
		return idle
	}, timeout, 400*time.Millisecond).Should(BeTrue())
}

var _ = Describe("Faults", func() {
	It("a lost create response makes no duplicate", func() {
		ns, a := newNamespace(), newAgent()
		create(service(ns, "db"))
		for range 3 {
			a.docker.LoseNextResponse(fake.OpEnsureContainer)
		}
		a.docker.LoseNextResponse(fake.OpEnsureNetwork)
		a.docker.LoseNextResponse(fake.OpStartContainer)
		sbx := sandbox(ns, "lossy", a.node)
		sbx.Spec.Services = []string{"db"}
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		for _, role := range []string{dsv1alpha1.RoleHolder, dsv1alpha1.RoleService, dsv1alpha1.RolePrimary} {
			Expect(containers(a.docker, sbx, role)).To(HaveLen(1), role)
		}
		nets, err := a.docker.ListNetworks(ctx(), map[string]string{dsv1alpha1.LabelUID: string(get(sbx).UID)})
		Expect(err).NotTo(HaveOccurred())
		Expect(nets).To(HaveLen(1))
	})

	It("an event stream drop is recovered when the stream resumes", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "deaf", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		waitIdle(a)

		a.docker.DropEvents()
		Expect(a.docker.Exit(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name, 1)).To(Succeed())
		Consistently(phase(sbx), 700*time.Millisecond).Should(Equal(dsv1alpha1.SandboxRunning), "the die event was lost")
		a.docker.ResumeEvents()
		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned), 3*time.Second).Should(Equal("True/PrimaryExited"))
	})

	It("the periodic sweep catches an event that was lost for good", func() {
		ns, a := newNamespace(), newAgent(func(o *agent.Options) { o.SweepPeriod = 300 * time.Millisecond })
		sbx := sandbox(ns, "missed", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		a.docker.DropEvents()
		Expect(a.docker.Exit(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name, 1)).To(Succeed())
		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned), 3*time.Second).Should(Equal("True/PrimaryExited"))
	})

	It("a daemon that does not answer is reported and recovered from", func() {
		ns, a := newNamespace(), newAgent()
		a.docker.SetUnavailable(true)
		sbx := sandbox(ns, "patient", a.node)
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/DockerUnavailable"))
		Expect(condition(sbx, dsv1alpha1.ConditionReconciling)()).To(Equal("True/DockerUnavailable"))
		Expect(message(sbx, dsv1alpha1.ConditionReady)).NotTo(ContainSubstring("conflict"))
		a.docker.SetUnavailable(false)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})
})

// endOutage refuses, with 503 as an overloaded or restarting API server would, the next refuse status
// writes that end an Execution (phase Succeeded or Failed), whichever client of the agent sends them.
type endOutage struct {
	mu      sync.Mutex
	refuse  int
	refused int
}

// config is the suite's API server seen through the outage.
func (o *endOutage) config() *rest.Config {
	conf := rest.CopyConfig(cfg)
	conf.Wrap(func(next http.RoundTripper) http.RoundTripper { return outageTransport{o, next} })
	return conf
}

func (o *endOutage) take() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.refused >= o.refuse {
		return false
	}
	o.refused++
	return true
}

func (o *endOutage) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refused
}

type outageTransport struct {
	outage *endOutage
	next   http.RoundTripper
}

const unavailableStatus = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected: the server is currently unable to handle the request","reason":"ServiceUnavailable","code":503}`

func (t outageTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPatch || req.Body == nil || !strings.Contains(req.URL.Path, "/executions/") || !strings.HasSuffix(req.URL.Path, "/status") {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	ends := bytes.Contains(body, []byte(`"phase":"Succeeded"`)) || bytes.Contains(body, []byte(`"phase":"Failed"`))
	if !ends || !t.outage.take() {
		return t.next.RoundTrip(req)
	}
	return &http.Response{
		StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Request: req,
		Header: http.Header{"Content-Type": []string{"application/json"}},
		Body:   io.NopCloser(strings.NewReader(unavailableStatus)), ContentLength: int64(len(unavailableStatus)),
	}, nil
}

var _ = Describe("API faults at the end of an Execution", func() {
	// run starts an agent behind an outage refusing refuse writes of an Execution's end, a Ready session on
	// it, and an Execution that echoes; it returns them once the Execution has ended.
	run := func(refuse int) (*testAgent, *dsv1alpha1.Sandbox, *dsv1alpha1.Execution, *endOutage) {
		ns, node, jobs := newNamespace(), newNode(), newJobLog()
		outage := &endOutage{refuse: refuse}
		a := startAgentOn(outage.config(), node, newDocker(node))
		a.docker.SetExecHandler(jobs.handle)
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8s.DeleteAllOf(ctx, &dsv1alpha1.Execution{}, client.InNamespace(ns))).To(Succeed())
		})
		sbx := sandbox(ns, "shell", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		ex := execution(ns, "hello", "shell", "echo")
		create(ex)
		Eventually(execState(ex)).Should(Equal("Succeeded/Completed"))
		return a, sbx, ex, outage
	}

	// expectOutcomeKept checks that the Execution ended as its command did, and nothing was done to its
	// Sandbox for the writes that failed.
	expectOutcomeKept := func(a *testAgent, sbx *dsv1alpha1.Sandbox, ex *dsv1alpha1.Execution) {
		GinkgoHelper()
		cur := getExec(ex)
		Expect(cur.Status.ExitCode).To(HaveValue(BeZero()))
		Expect(cur.Status.Stdout).To(HavePrefix("stdin="))
		Expect(cur.Status.Stderr).To(Equal("a warning\n"))
		Expect(cur.Status.SandboxKilled).To(BeFalse())
		Eventually(execEventReasons(ex)).Should(ContainElement("ExecutionSucceeded"))
		Consistently(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)()).NotTo(HavePrefix("True"))
		Expect(a.docker.Calls(fake.OpStopContainer)).To(BeZero(), "the container is not stopped")
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning))
	}

	It("an end whose first two status writes meet 503 is written with its output, and the Sandbox stays Ready", func() {
		a, sbx, ex, outage := run(2)
		Expect(outage.count()).To(Equal(2))
		expectOutcomeKept(a, sbx, ex)
	})

	It("an end whose status writes fail past the run's own retries is kept and written by the next pass, not Lost", func() {
		a, sbx, ex, outage := run(6) // the run's four tries, then two of the pass's
		Expect(outage.count()).To(Equal(6))
		expectOutcomeKept(a, sbx, ex)
	})
})

var _ = Describe("Deletion", func() {
	It("removes primary, services in reverse order, network, holder, volumes, then lets the Sandbox go", func() {
		ns := newNamespace()
		a, stubborn := newStubbornAgent()
		create(service(ns, "first"))
		create(service(ns, "second"))
		sbx := sandbox(ns, "tidy", a.node)
		sbx.Spec.Services = []string{"first", "second"}
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		// A new session's holder comes on the pass after the one that made it Ready: wait for it, so that the
		// deletion has one to remove.
		Eventually(state(a.docker, sbx, dsv1alpha1.RoleHolder, "")).Should(Equal(dd.StateRunning))
		uid := string(get(sbx).UID)

		Expect(k8s.Delete(ctx(), sbx)).To(Succeed())
		Eventually(gone(sbx)).Should(BeTrue())
		Expect(holdings(a.docker, uid)).To(BeZero())
		Expect(stubborn.removals()).To(Equal([]string{
			dsv1alpha1.RolePrimary, dsv1alpha1.RoleService + "second", dsv1alpha1.RoleService + "first", "network", dsv1alpha1.RoleHolder, "volume", "volume", "volume",
		}), "the workspace, the run volume and the supervisor volume last")
		Eventually(eventReasons(sbx)).Should(ContainElement("CleanedUp"))
	})

	It("an uncertain removal holds the finalizer, says so, and is retried until Docker confirms", func() {
		ns := newNamespace()
		a, stubborn := newStubbornAgent()
		sbx := sandbox(ns, "sticky", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		uid := string(get(sbx).UID)

		stubborn.uncertain.Store(true)
		Expect(k8s.Delete(ctx(), sbx)).To(Succeed())
		Eventually(condition(sbx, dsv1alpha1.ConditionReconciling)).Should(Equal("True/CleanupFailed"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxTerminating))
		Expect(message(sbx, dsv1alpha1.ConditionReconciling)).To(ContainSubstring("not confirmed"))
		Consistently(func() []string { return get(sbx).Finalizers }).Should(ContainElement(dsv1alpha1.FinalizerCleanup))

		stubborn.uncertain.Store(false)
		Eventually(gone(sbx)).Should(BeTrue())
		Expect(holdings(a.docker, uid)).To(BeZero())
	})

	It("an uncertain removal of the old topology blocks the new one until a retry confirms it", func() {
		ns := newNamespace()
		a, stubborn := newStubbornAgent()
		sbx := sandbox(ns, "blocked", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		stubborn.uncertain.Store(true)
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Args = nil; s.Spec.WorkingDir = "/tmp" })
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/CleanupFailed"))
		Expect(message(sbx, dsv1alpha1.ConditionReady)).To(ContainSubstring("waits"))
		Consistently(func() int { return len(containers(a.docker, sbx, dsv1alpha1.RolePrimary)) }).Should(Equal(1))
		Expect(get(sbx).Status.TopologyGeneration).To(BeEquivalentTo(1), "no new generation while the old may run")

		stubborn.uncertain.Store(false)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(get(sbx).Status.TopologyGeneration).To(BeEquivalentTo(2))
		Expect(containers(a.docker, sbx, dsv1alpha1.RolePrimary)).To(HaveLen(1))
	})
})
