//go:build integration

package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// metricValue reads one series from the manager's registry: a counter's or gauge's value, or a histogram's
// sample count; 0 when the series does not exist.
func metricValue(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			default:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

var _ = Describe("Metrics", func() {
	It("tell time to Ready, Docker latency and errors by phase, Sandboxes by phase and poisonings by reason", func() {
		ns, a := newNamespace(), newAgent()
		readyBefore := metricValue("dockside_sandbox_ready_seconds", map[string]string{"kind": "session"})
		poisonedBefore := metricValue("dockside_topology_poisonings_total", map[string]string{"reason": dsv1alpha1.ReasonPrimaryExited})
		listErrors := map[string]string{"operation": "ListContainers", "phase": string(dd.PhaseObserve), "kind": string(dd.KindUnavailable)}
		errorsBefore := metricValue("dockside_docker_operation_errors_total", listErrors)

		sbx := sandbox(ns, "measured", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		running := map[string]string{"node": a.node, "phase": string(dsv1alpha1.SandboxRunning)}
		Eventually(func() float64 { return metricValue("dockside_sandboxes", running) }).Should(Equal(1.0))
		Expect(metricValue("dockside_sandbox_ready_seconds", map[string]string{"kind": "session"})).To(Equal(readyBefore + 1))
		Expect(metricValue("dockside_docker_operation_duration_seconds",
			map[string]string{"operation": "EnsureContainer", "phase": string(dd.PhaseCreate)})).To(BeNumerically(">", 0))

		a.docker.FailNext(fake.OpListContainers, dd.KindUnavailable)
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Labels = map[string]string{"touched": "yes"} })
		Eventually(func() float64 { return metricValue("dockside_docker_operation_errors_total", listErrors) }).Should(Equal(errorsBefore + 1))

		Expect(a.docker.Exit(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name, 1)).To(Succeed())
		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxFailed))
		Expect(metricValue("dockside_topology_poisonings_total", map[string]string{"reason": dsv1alpha1.ReasonPrimaryExited})).To(Equal(poisonedBefore + 1))
		Eventually(func() float64 {
			return metricValue("dockside_sandboxes", map[string]string{"node": a.node, "phase": string(dsv1alpha1.SandboxFailed)})
		}).Should(Equal(1.0))
	})
})
