//go:build integration

package controllers_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

// Idle costs nothing (issue 18): once its Sandboxes have settled, an agent looks at Docker only in its
// periodic sweep, whatever kind of Sandbox it holds: no pass over a Sandbox (each begins by listing the
// containers of its UID), and no Docker call but the sweep's three listings of the whole node.
var _ = Describe("At rest", func() {
	It("settled Sandboxes of every kind are not woken, their startup deadlines and sweeps passing included", func() {
		ns, node := newNamespace(), newNode()
		docker := &passCounter{Driver: newDocker(node)}
		docker.SetExecHandler(failingChecks)
		a := startAgent(node, docker.Driver, func(o *agent.Options) { o.Driver, o.SweepPeriod = docker, 500*time.Millisecond })
		create(service(ns, "db")) // no readiness: only services that declare one are checked periodically
		never := service(ns, "never-ready")
		never.Spec.Readiness = &dsv1alpha1.Readiness{Command: []string{"false"}, PeriodSeconds: 1, FailureThreshold: 1}
		create(never)

		// A startup deadline that passes during the watch below: a start that is over, or that failed, must
		// have let go of the wakeup it asked for at its deadline.
		const deadline = 4
		kinds := map[string]func(*dsv1alpha1.Sandbox){
			"none":         func(*dsv1alpha1.Sandbox) {},
			"isolated":     func(s *dsv1alpha1.Sandbox) { s.Spec.Network.Mode = dsv1alpha1.NetworkIsolated },
			"unrestricted": func(s *dsv1alpha1.Sandbox) { s.Spec.Network.Mode = dsv1alpha1.NetworkUnrestricted },
			"with-service": func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"db"} },
			"paused":       func(s *dsv1alpha1.Sandbox) { s.Spec.Lifecycle = dsv1alpha1.LifecyclePaused },
			"finished-run": func(s *dsv1alpha1.Sandbox) { s.Spec.Command = []string{"true"} },
			"failed-start": func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"never-ready"} },
		}
		var sandboxes []*dsv1alpha1.Sandbox
		for name, kind := range kinds {
			sbx := sandbox(ns, name, a.node)
			sbx.Spec.StartupDeadlineSeconds = deadline
			kind(sbx)
			create(sbx)
			sandboxes = append(sandboxes, sbx)
		}
		for _, sbx := range sandboxes {
			if sbx.Name == "failed-start" {
				Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/ServiceReadinessFailed"))
				continue
			}
			if sbx.Spec.Command != nil {
				Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxRunning))
				Expect(a.docker.Exit(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name, 0)).To(Succeed())
			}
			Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(HavePrefix("True/"), sbx.Name)
		}
		last := int64(-1)
		Eventually(func() bool { n := docker.passes.Load(); still := n == last; last = n; return still }, timeout, 400*time.Millisecond).
			Should(BeTrue(), "the starts are over")

		passes, before := docker.passes.Load(), dockerCalls(a.docker)
		Consistently(docker.passes.Load, (deadline+2)*time.Second, 100*time.Millisecond).Should(Equal(passes), "passes over idle Sandboxes")
		calls := callsSince(a.docker, before)
		Expect(calls[fake.OpListVolumes]).To(BeNumerically(">=", 3), "the sweeper ran meanwhile")
		delete(calls, fake.OpListContainers)
		delete(calls, fake.OpListNetworks)
		delete(calls, fake.OpListVolumes)
		Expect(calls).To(BeEmpty(), "Docker calls at rest other than the sweep's listings, by operation")
	})
})

// everyOp is every operation of the fake daemon that reaches Docker.
var everyOp = []fake.Op{
	fake.OpPing, fake.OpSecurity, fake.OpStorage, fake.OpInspectImage, fake.OpPullImage,
	fake.OpEnsureNetwork, fake.OpObserveNetwork, fake.OpRemoveNetwork, fake.OpListNetworks,
	fake.OpEnsureVolume, fake.OpObserveVolume, fake.OpRemoveVolume, fake.OpListVolumes,
	fake.OpEnsureContainer, fake.OpStartContainer, fake.OpObserveContainer, fake.OpStopContainer, fake.OpRemoveContainer,
	fake.OpListContainers, fake.OpPauseContainer, fake.OpUnpauseContainer, fake.OpExec, fake.OpCopyFrom, fake.OpCopyTo, fake.OpLogTail,
}

// dockerCalls counts the daemon's calls so far, by operation.
func dockerCalls(d *fake.Driver) map[fake.Op]int {
	out := map[fake.Op]int{}
	for _, op := range everyOp {
		out[op] = d.Calls(op)
	}
	return out
}

// callsSince is the daemon's calls since before, by operation, leaving out those not called since.
func callsSince(d *fake.Driver, before map[fake.Op]int) map[fake.Op]int {
	out := map[fake.Op]int{}
	for op, n := range dockerCalls(d) {
		if n > before[op] {
			out[op] = n - before[op]
		}
	}
	return out
}

// passCounter is the fake daemon counting the passes over Sandboxes: each begins by listing the containers of
// one Sandbox UID, where the sweeper lists the whole node's.
type passCounter struct {
	*fake.Driver
	passes atomic.Int64
}

func (d *passCounter) ListContainers(ctx context.Context, match map[string]string) ([]dd.ContainerInfo, error) {
	if match[dsv1alpha1.LabelUID] != "" {
		d.passes.Add(1)
	}
	return d.Driver.ListContainers(ctx, match)
}
