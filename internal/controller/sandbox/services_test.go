package sandbox

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/status"
)

// withReadiness gives a SandboxService a readiness command checked every 2 s, threshold failures in a row
// allowed.
func withReadiness(threshold int32) func(*dsv1alpha1.SandboxService) {
	return func(svc *dsv1alpha1.SandboxService) {
		svc.Spec.Readiness = &dsv1alpha1.Readiness{Command: []string{"check"}, PeriodSeconds: 2, TimeoutSeconds: 1, FailureThreshold: threshold}
	}
}

// withSecretEnv makes a SandboxService's env need key pw of Secret creds.
func withSecretEnv(svc *dsv1alpha1.SandboxService) {
	svc.Spec.Env = []dsv1alpha1.EnvVar{{Name: "PW", ValueFrom: &dsv1alpha1.EnvVarSource{
		SecretKeyRef: dsv1alpha1.SecretKeySelector{Name: "creds", Key: "pw"},
	}}}
}

// serviceAt records where the i-th service of the Sandbox stood after an earlier pass.
func serviceAt(sbx *dsv1alpha1.Sandbox, i int, state dsv1alpha1.ServiceState, containerID string) *dsv1alpha1.Sandbox {
	sbx.Status.Services[i].State, sbx.Status.Services[i].ContainerID = state, containerID
	return sbx
}

// checksHang makes every readiness check run until its timeout.
func checksHang(h *harness) {
	h.docker.SetExecHandler(func(ctx context.Context, _ string, _ dd.ExecRequest) fake.ExecOutput {
		<-ctx.Done()
		return fake.ExecOutput{}
	})
}

// checksExit makes every readiness check exit with code.
func checksExit(code int) func(h *harness) {
	return func(h *harness) {
		h.docker.SetExecHandler(func(context.Context, string, dd.ExecRequest) fake.ExecOutput { return fake.ExecOutput{ExitCode: code} })
	}
}

func TestEnsureServices(t *testing.T) {
	db, web, checked := newService("db"), newService("web"), newService("checked", withReadiness(3))
	states := func(want ...dsv1alpha1.ServiceState) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			var got []dsv1alpha1.ServiceState
			for _, st := range s.sbx.Status.Services {
				got = append(got, st.State)
			}
			g.Expect(got).To(Equal(want))
		}
	}
	topology := func(names ...string) *dsv1alpha1.Sandbox {
		byName := map[string]*dsv1alpha1.SandboxService{"db": db, "web": web, "checked": checked}
		var svcs []*dsv1alpha1.SandboxService
		for _, n := range names {
			svcs = append(svcs, byName[n])
		}
		return atTopology(newSandbox("s", withServices(names...)), 1, svcs...)
	}
	network := func(h *harness, s *scope) { h.makeNetwork(s) }
	started, ready := "Normal "+EventServiceStarted, "Normal "+EventServiceReady
	poisoned := []string{"Warning " + EventPoisoned}
	runStepCases(t, (*Reconciler).ensureServices, []stepCase{
		{
			name:    "services start in spec order, each once the one before it is ready",
			sbx:     topology("web", "db"),
			objects: []client.Object{newService("db"), newService("web")},
			docker:  network,
			events:  []string{started, ready, started, ready},
			check: func(g Gomega, h *harness, s *scope) {
				states(dsv1alpha1.ServiceReady, dsv1alpha1.ServiceReady)(g, h, s)
				g.Expect(h.view.calls()).To(Equal([]string{"start " + s.serviceName("web"), "start " + s.serviceName("db")}))
				for _, st := range s.sbx.Status.Services {
					g.Expect(st.ContainerID).To(Equal(h.container(s.serviceName(st.Name)).ID))
					g.Expect(st.ServiceGeneration).To(Equal(int64(1)))
				}
			},
		},
		{
			name:    "the next service waits while one has not passed readiness",
			checked: true,
			sbx:     topology("checked", "db"),
			objects: []client.Object{newService("checked", withReadiness(3)), newService("db")},
			docker:  network,
			faults:  checksExit(1),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonWaitingForServices},
			message: `waiting for service "checked" to pass readiness`,
			events:  []string{started},
			check: func(g Gomega, h *harness, s *scope) {
				states(dsv1alpha1.ServiceStarting, dsv1alpha1.ServicePending)(g, h, s)
				g.Expect(h.container(s.serviceName("db")).Exists).To(BeFalse())
				g.Expect(s.recheck).To(Equal(2 * time.Second))
			},
		},
		{
			name:    "a service that passes readiness is Ready and the next one starts",
			checked: true,
			sbx:     topology("checked", "db"),
			objects: []client.Object{newService("checked", withReadiness(3)), newService("db")},
			docker:  network,
			faults:  checksExit(0),
			// the wait's outcome stays until ensurePrimary, the next step, sets the pass's own
			want:   outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonWaitingForServices},
			events: []string{started, ready, started, ready},
			check:  states(dsv1alpha1.ServiceReady, dsv1alpha1.ServiceReady),
		},
		{
			name:    "a service that did not pass readiness within its checks poisons the topology",
			checked: true,
			sbx:     topology("checked"),
			objects: []client.Object{newService("checked", withReadiness(3))},
			docker: func(h *harness, s *scope) {
				h.view.age(h.start(h.serviceSpec(s, checked)), 10*time.Minute)
			},
			faults:  checksExit(1),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonServiceReadinessFailed},
			message: "did not pass readiness within 3 checks; the last one exited with code 1",
			events:  poisoned,
			check: func(g Gomega, h *harness, s *scope) {
				states(dsv1alpha1.ServiceFailed)(g, h, s)
				g.Expect(condition(s.sbx, dsv1alpha1.ConditionTopologyPoisoned).Reason).To(Equal(dsv1alpha1.ReasonServiceReadinessFailed))
			},
		},
		{
			name:    "a starting service's check that outlasts its timeout is one failed check; the service runs on",
			checked: true,
			sbx:     topology("checked"),
			objects: []client.Object{newService("checked", withReadiness(3))},
			docker:  network,
			faults:  checksHang,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonWaitingForServices},
			message: `waiting for service "checked" to pass readiness; its last check timed out after 1s`,
			events:  []string{started},
			check: func(g Gomega, h *harness, s *scope) {
				states(dsv1alpha1.ServiceStarting)(g, h, s)
				g.Expect(h.container(s.serviceName("checked")).State).To(Equal(dd.StateRunning))
				g.Expect(s.recheck).To(Equal(2 * time.Second))
			},
		},
		{
			name:    "a starting service whose checks time out until its time is up poisons, saying they timed out",
			checked: true,
			sbx:     topology("checked"),
			objects: []client.Object{newService("checked", withReadiness(3))},
			docker: func(h *harness, s *scope) {
				h.view.age(h.start(h.serviceSpec(s, checked)), 10*time.Minute)
			},
			faults:  checksHang,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonServiceReadinessFailed},
			message: "did not pass readiness within 3 checks; the last one timed out after 1s",
			events:  poisoned,
			check: func(g Gomega, h *harness, s *scope) {
				states(dsv1alpha1.ServiceFailed)(g, h, s)
				g.Expect(h.container(s.serviceName("checked")).State).To(Equal(dd.StateRunning), "stopping is the next pass's, on the recorded decision")
			},
		},
		{
			name:    "a service that stopped poisons the topology and is not started again",
			sbx:     serviceAt(topology("db"), 0, dsv1alpha1.ServiceReady, "recorded"),
			objects: []client.Object{newService("db")},
			docker:  func(h *harness, s *scope) { h.exited(h.serviceSpec(s, db), 1) },
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonServiceExited},
			message: `service "db" stopped with exit code 1`,
			events:  poisoned,
			check: func(g Gomega, h *harness, s *scope) {
				states(dsv1alpha1.ServiceFailed)(g, h, s)
				g.Expect(s.sbx.Status.Services[0].Message).To(Equal("its container stopped"))
				g.Expect(h.view.calls()).To(BeEmpty())
			},
		},
		{
			name:    "a service whose container was removed poisons the topology and is not made again",
			sbx:     serviceAt(topology("db"), 0, dsv1alpha1.ServiceReady, "recorded"),
			objects: []client.Object{newService("db")},
			docker:  network,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonServiceExited},
			message: `service "db"'s container was removed`,
			events:  poisoned,
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.serviceName("db")).Exists).To(BeFalse())
			},
		},
		{
			name:    "a service made by a pass whose status write was lost is adopted and started",
			sbx:     topology("db"),
			objects: []client.Object{newService("db", func(svc *dsv1alpha1.SandboxService) { svc.Generation = 4 })},
			docker:  func(h *harness, s *scope) { h.create(h.serviceSpec(s, db)) },
			events:  []string{started, ready},
			check: func(g Gomega, h *harness, s *scope) {
				states(dsv1alpha1.ServiceReady)(g, h, s)
				g.Expect(s.sbx.Status.Services[0].ServiceGeneration).To(Equal(int64(4)))
				g.Expect(h.docker.Calls(fake.OpEnsureContainer)).To(Equal(1), "only the setup's")
			},
		},
		{
			name:    "a Secret the env needs is waited for, Pending",
			sbx:     topology("db"),
			objects: []client.Object{newService("db", withSecretEnv)},
			docker:  network,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonSecretNotFound},
			message: `key "pw" of Secret "creds" does not exist`,
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.serviceName("db")).Exists).To(BeFalse())
				g.Expect(s.recheck).To(Equal(specRetry))
			},
		},
		{
			name: "with its Secret there the service is made",
			sbx:  topology("db"),
			objects: []client.Object{newService("db", withSecretEnv), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "creds"}, Data: map[string][]byte{"pw": []byte("hunter2")},
			}},
			docker: network,
			events: []string{started, ready},
			check:  states(dsv1alpha1.ServiceReady),
		},
		{
			name:    "an image removed since it was seen to is looked for again",
			sbx:     topology("db"),
			objects: []client.Object{newService("db", func(svc *dsv1alpha1.SandboxService) { svc.Spec.Image = pulledImage })},
			docker:  network,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonImageNotPresent},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.recheck).To(Equal(status.StaleRetry))
			},
		},
		{
			name:    "a ready service is checked every period; a failure under the threshold is only counted",
			checked: true,
			sbx:     serviceAt(topology("checked"), 0, dsv1alpha1.ServiceReady, ""),
			objects: []client.Object{newService("checked", withReadiness(3))},
			docker:  func(h *harness, s *scope) { h.start(h.serviceSpec(s, checked)) },
			faults:  checksExit(1),
			check: func(g Gomega, h *harness, s *scope) {
				states(dsv1alpha1.ServiceReady)(g, h, s)
				g.Expect(h.docker.Calls(fake.OpExec)).To(Equal(1))
				g.Expect(s.recheck).To(Equal(2 * time.Second))
			},
		},
		{
			name:    "a ready service failing failureThreshold checks in a row poisons: ServiceUnhealthy",
			checked: true,
			sbx:     serviceAt(topology("checked"), 0, dsv1alpha1.ServiceReady, ""),
			objects: []client.Object{newService("checked", withReadiness(1))},
			docker:  func(h *harness, s *scope) { h.start(h.serviceSpec(s, checked)) },
			faults:  checksExit(1),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonServiceUnhealthy},
			message: `service "checked" failed readiness 1 of 1 times in a row; the last check exited with code 1`,
			events:  poisoned,
			check:   states(dsv1alpha1.ServiceFailed),
		},
		{
			name:    "a frozen ready service is not checked",
			sbx:     serviceAt(topology("checked"), 0, dsv1alpha1.ServiceReady, ""),
			objects: []client.Object{newService("checked", withReadiness(1))},
			docker:  func(h *harness, s *scope) { h.paused(h.serviceSpec(s, checked)) },
			faults:  checksExit(1),
			check: func(g Gomega, h *harness, s *scope) {
				states(dsv1alpha1.ServiceReady)(g, h, s)
				g.Expect(h.docker.Calls(fake.OpExec)).To(BeZero())
			},
		},
		{
			name:    "a service Docker can never run is Stalled",
			sbx:     topology("db"),
			objects: []client.Object{newService("db")},
			docker:  network,
			faults:  func(h *harness) { h.docker.FailNext(fake.OpEnsureContainer, dd.KindInvalidSpec) },
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonServiceStartFailed},
			message: "creating service db failed",
		},
		{
			name:    "Docker unavailable while starting a service: retried",
			sbx:     topology("db"),
			objects: []client.Object{newService("db")},
			docker:  network,
			faults:  func(h *harness) { h.docker.FailNext(fake.OpStartContainer, dd.KindUnavailable) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "starting service db failed",
			check:   states(dsv1alpha1.ServicePending),
		},
	})
}

// TestServiceInstanceKeepsItsGeneration: an instance records the SandboxService generation it was built
// from, and keeps it while the SandboxService changes (it is picked up at the next roll).
func TestServiceInstanceKeepsItsGeneration(t *testing.T) {
	g := NewWithT(t)
	sbx := atTopology(newSandbox("s", withServices("db")), 1, newService("db"))
	h := newHarness(t, sbx.DeepCopy(), newService("db"))
	pass := func() {
		s := h.scope(sbx)
		h.continues(h.r.ensureNetwork(h.ctx, s))
		h.continues(h.r.ensureServices(h.ctx, s))
	}
	pass()
	g.Expect(sbx.Status.Services[0].ServiceGeneration).To(Equal(int64(1)))

	svc := &dsv1alpha1.SandboxService{}
	h.noErr(h.client.Get(h.ctx, client.ObjectKey{Namespace: testNS, Name: "db"}, svc))
	svc.Generation = 2
	h.noErr(h.client.Update(h.ctx, svc))
	pass()
	g.Expect(sbx.Status.Services[0].ServiceGeneration).To(Equal(int64(1)))
}
