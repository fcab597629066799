//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/loopback"
)

// Nothing in these specs may make the daemon reach a registry off this machine: the only pull goes to a
// loopback port where nothing listens, and the other images are local builds or use policy Never.

// eventReasons lists the reasons of the Events about one object.
func eventReasons(ns, name string) []string {
	GinkgoHelper()
	out, err := kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.name="+name, "-o", "jsonpath={.items[*].reason}")
	Expect(err).NotTo(HaveOccurred())
	return strings.Fields(out)
}

var _ = Describe("Images and the startup deadline on real Docker", func() {
	It("fails at once with policy Never and a missing image, building nothing", func() {
		ns := newNamespace("never")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: absent
spec:
  image: dockside.dev/absent:local
  imagePullPolicy: Never
`)
		waitFor(ns, "sandbox/absent", "jsonpath={.status.conditions[?(@.type==\"Stalled\")].reason}=ImageNotPresent", time.Minute)
		Expect(field(ns, "sandbox/absent", "{.status.phase}")).To(Equal("Failed"))
		Expect(containers(ns, "absent", "")).To(BeEmpty())
		Expect(eventReasons(ns, "absent")).NotTo(ContainElement("Pulling"))
		deleteAndExpectGone(ns, "absent")
	})

	It("runs a present local image with IfNotPresent without pulling", func() {
		ns := newNamespace("present")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: local
spec:
  image: dockside.dev/busybox:local
  imagePullPolicy: IfNotPresent
`)
		waitFor(ns, "sandbox/local", "condition=Ready", 90*time.Second)
		Expect(eventReasons(ns, "local")).NotTo(ContainElement("Pulling"))
		Expect(field(ns, "sandbox/local", "{.status.startup.topologyGeneration}")).To(Equal("1"))
		deleteAndExpectGone(ns, "local")
	})

	It("fails a start whose service never passes readiness at the startup deadline, removing what it built", func() {
		ns := newNamespace("not-ready")
		apply(ns, stubbornService)
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: waiting
spec:
  image: dockside.dev/busybox:local
  services: ["stubborn"]
  startupDeadlineSeconds: 600
`)
		waitForReadyMessage(ns, "sandbox/waiting", `waiting for service "stubborn" to pass readiness; its last check exited with code 1`)
		deadline := shortenStartupDeadline(ns, "sandbox/waiting")
		waitFor(ns, "sandbox/waiting", "jsonpath={.status.conditions[?(@.type==\"Stalled\")].reason}=ServiceNotReady", startupFailWait)
		expectFailedAt(ns, "sandbox/waiting", deadline)
		Expect(field(ns, "sandbox/waiting", "{.status.phase}")).To(Equal("Failed"))
		Expect(field(ns, "sandbox/waiting", `{.status.conditions[?(@.type=="Stalled")].message}`)).To(ContainSubstring(`service "stubborn"`))
		Eventually(func() []string {
			return append(containers(ns, "waiting", "service"), topologyNetworks(ns, "waiting")...)
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeEmpty(), "the service and the topology's network are removed")
		Expect(containers(ns, "waiting", "primary")).To(BeEmpty())
		volumes, err := docker("volume", "ls", "-q", "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns,
			"--filter", "label="+dsv1alpha1.LabelName+"=waiting", "--filter", "label="+dsv1alpha1.LabelRole+"="+dsv1alpha1.RoleWorkspace)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(volumes)).To(HaveLen(1), "the workspace is kept")
		Expect(containers(ns, "waiting", "holder")).To(BeEmpty(), "no primary ever held it, so it got no holder")
		Expect(eventReasons(ns, "waiting")).To(ContainElement("StartupFailed"))
		deleteAndExpectGone(ns, "waiting")
	})

	It("fails a pull from a registry where nothing listens at the deadline, in its own words", func() {
		ns := newNamespace("unreachable")
		closed, err := loopback.FreeAddr()
		Expect(err).NotTo(HaveOccurred())
		image := closed + "/nothing/here:1"
		apply(ns, fmt.Sprintf(`
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: nowhere
spec:
  image: %s
  startupDeadlineSeconds: 600
`, image))
		waitFor(ns, "sandbox/nowhere", "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}=ImagePullFailed", time.Minute)
		deadline := shortenStartupDeadline(ns, "sandbox/nowhere")
		waitFor(ns, "sandbox/nowhere", "jsonpath={.status.conditions[?(@.type==\"Stalled\")].reason}=ImagePullTimeout", startupFailWait)
		expectFailedAt(ns, "sandbox/nowhere", deadline)
		Expect(field(ns, "sandbox/nowhere", "{.status.phase}")).To(Equal("Failed"))
		status := field(ns, "sandbox/nowhere", "{.status}")
		Expect(status).To(ContainSubstring("the registry could not be reached"))
		for _, docker := range []string{"dial tcp", "connection refused", "http://", "/v2/"} {
			Expect(status).NotTo(ContainSubstring(docker), "Docker's own message text stays out of status")
		}
		Expect(eventReasons(ns, "nowhere")).To(ContainElements("Pulling", "PullFailed", "StartupFailed"))
		Expect(containers(ns, "nowhere", "")).To(BeEmpty())
		deleteAndExpectGone(ns, "nowhere")
	})
})
