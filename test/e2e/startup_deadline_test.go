//go:build e2e

package e2e

import (
	"fmt"
	"math"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// The startup deadline specs never race a short deadline against the phases before the one they test: each
// Sandbox starts with a long deadline, waits until its start is in the phase under test, and only then has
// the deadline brought to a few seconds from now (the agent applies a changed deadline to a start going on).
// How slow the earlier phases were on a busy machine then changes nothing.
const (
	// deadlineLead is how far ahead of the moment it is set the shortened deadline lies, so that the agent's
	// own wakeup, not the pass the change itself causes, usually ends the start.
	deadlineLead = 5 * time.Second
	// deadlineSlack is how long after its deadline a start may be failed: one pass of the agent, with room
	// for a busy machine.
	deadlineSlack = 30 * time.Second
	// startupFailWait bounds the wait for the failure after the deadline was shortened.
	startupFailWait = deadlineLead + deadlineSlack + 30*time.Second
)

// stubbornService never passes readiness, and its next check is five minutes away: a start waiting for it
// that fails within deadlineSlack of its deadline was ended by the deadline's own wakeup.
const stubbornService = `
apiVersion: dockside.dev/v1alpha1
kind: SandboxService
metadata:
  name: stubborn
spec:
  image: dockside.dev/busybox:local
  command: ["sleep", "3600"]
  readiness:
    command: ["false"]
    periodSeconds: 300
    failureThreshold: 100
`

// waitForReadyMessage waits until the Ready condition of object says message.
func waitForReadyMessage(ns, object, message string) {
	GinkgoHelper()
	Eventually(func() string {
		return field(ns, object, `{.status.conditions[?(@.type=="Ready")].message}`)
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Equal(message), "%s never got to %q", object, message)
}

// shortenStartupDeadline sets the startup deadline of a Sandbox whose start is under way to deadlineLead
// from now (rounded up to whole seconds from the start's own clock) and returns when it falls.
func shortenStartupDeadline(ns, object string) time.Time {
	GinkgoHelper()
	started, err := time.Parse(time.RFC3339Nano, field(ns, object, "{.status.startup.startTime}"))
	Expect(err).NotTo(HaveOccurred())
	secs := int(math.Ceil((time.Since(started) + deadlineLead).Seconds()))
	_, err = kubectl("patch", "-n", ns, object, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"startupDeadlineSeconds":%d}}`, secs))
	Expect(err).NotTo(HaveOccurred())
	return started.Add(time.Duration(secs) * time.Second)
}

// expectFailedAt checks, on the agent's own clock, that the start failed at its deadline: not before it, and
// within deadlineSlack after it. Stalled turned True when the start failed; its time has whole seconds.
func expectFailedAt(ns, object string, deadline time.Time) {
	GinkgoHelper()
	at, err := time.Parse(time.RFC3339, field(ns, object, `{.status.conditions[?(@.type=="Stalled")].lastTransitionTime}`))
	Expect(err).NotTo(HaveOccurred())
	second := deadline.Truncate(time.Second)
	Expect(at).To(BeTemporally(">=", second), "failed before its deadline %s", deadline)
	Expect(at).To(BeTemporally("<=", deadline.Add(deadlineSlack)), "failed long after its deadline %s", deadline)
	AddReportEntry("startup deadline", fmt.Sprintf("%s failed %s after the second of its deadline", object, at.Sub(second)))
}

// topologyNetworks lists the IDs of the networks Docker holds for one Sandbox of ns.
func topologyNetworks(ns, name string) []string {
	GinkgoHelper()
	out, err := docker("network", "ls", "-q", "--filter", "label="+dsv1alpha1.LabelNode+"="+node,
		"--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns, "--filter", "label="+dsv1alpha1.LabelName+"="+name)
	Expect(err).NotTo(HaveOccurred())
	return strings.Fields(out)
}
