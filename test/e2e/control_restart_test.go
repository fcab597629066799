//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The SIGKILL spec's population: a session each, half of whose commands end while no agent runs (issue 30).
const (
	restartCommands = 10
	endWhileDown    = 5
)

var _ = Describe("An agent killed under running commands", Label("control-restart"), func() {
	It(fmt.Sprintf("costs no command and no session: %d commands, %d of them ending while no agent runs, each report their exit code and whole output",
		restartCommands, endWhileDown), func() {
		ns := newNamespace("ctlrestart")
		DeferCleanup(deleteAllIn, ns) // runs last: after the agent runs again
		down := false
		DeferCleanup(func() {
			if down {
				Expect(agent.Restart()).To(Succeed())
			}
		})
		logStart := logSize()
		DeferCleanup(func() { printAgentLogOnFailure(logStart) })

		var manifests, executions strings.Builder
		for i := range restartCommands {
			fmt.Fprintf(&manifests, "---\napiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: s-%02d\nspec:\n  image: dockside.dev/busybox:local\n  network:\n    mode: None\n", i)
			// Each waits for a file the test writes, then prints some 20 KB and exits with a code of its own.
			fmt.Fprintf(&executions, "---\n%s  timeoutSeconds: 600\n", execution(fmt.Sprintf("x-%02d", i), fmt.Sprintf("s-%02d", i),
				fmt.Sprintf("while [ ! -e /workspace/go ]; do sleep 0.2; done; echo done-%02d; seq 1 4000; echo to-stderr >&2; exit %d", i, i%4)))
		}
		apply(ns, manifests.String())
		for i := range restartCommands {
			waitFor(ns, fmt.Sprintf("sandbox/s-%02d", i), "condition=Ready", 5*time.Minute)
		}
		started := primaryStarts(ns)
		apply(ns, executions.String())
		for i := range restartCommands {
			waitFor(ns, fmt.Sprintf("execution/x-%02d", i), "jsonpath={.status.phase}=Running", 5*time.Minute)
			Eventually(func() string { return field(ns, fmt.Sprintf("execution/x-%02d", i), "{.status.exec.id}") }).
				WithTimeout(time.Minute).ShouldNot(BeEmpty(), "x-%02d has its exec recorded", i)
		}

		By("the agent SIGKILLed; half the commands end while it is down")
		down = true
		agent.Kill()
		for i := range endWhileDown {
			_, err := docker("exec", onlyContainerByLabel(ns, fmt.Sprintf("s-%02d", i)), "touch", "/workspace/go")
			Expect(err).NotTo(HaveOccurred())
		}
		for i := range endWhileDown {
			primary := onlyContainerByLabel(ns, fmt.Sprintf("s-%02d", i))
			Eventually(func() (string, error) { return docker("top", primary) }).WithTimeout(time.Minute).
				ShouldNot(ContainSubstring("sleep 0.2"), "s-%02d's command ended while no agent ran", i)
		}
		Expect(agent.Restart()).To(Succeed())
		down = false

		By("the other half end once the next agent runs")
		for i := endWhileDown; i < restartCommands; i++ {
			_, err := docker("exec", onlyContainerByLabel(ns, fmt.Sprintf("s-%02d", i)), "touch", "/workspace/go")
			Expect(err).NotTo(HaveOccurred())
		}

		By("each reports its exit code and whole output")
		var seq strings.Builder
		for n := 1; n <= 4000; n++ {
			fmt.Fprintf(&seq, "%d\n", n)
		}
		for i := range restartCommands {
			name := fmt.Sprintf("execution/x-%02d", i)
			Eventually(func() string { return field(ns, name, "{.status.phase}") }).WithTimeout(5*time.Minute).WithPolling(time.Second).
				Should(BeElementOf("Succeeded", "Failed"), name)
			Expect(field(ns, name, "{.status.exitCode}")).To(Equal(fmt.Sprint(i%4)), name)
			Expect(field(ns, name, "{.status.stdout}")).To(Equal(fmt.Sprintf("done-%02d\n", i)+seq.String()), name)
			Expect(field(ns, name, "{.status.stderr}")).To(Equal("to-stderr\n"), name)
			Expect(field(ns, name, "{.status.sandboxKilled}")).NotTo(Equal("true"), name)
		}

		By("no primary replaced, every session Ready and unpoisoned, and a new command runs")
		Expect(primaryStarts(ns)).To(Equal(started))
		for name := range started {
			waitFor(ns, "sandbox/"+name, "condition=Ready", time.Minute)
			Expect(field(ns, "sandbox/"+name, `{.status.conditions[?(@.type=="TopologyPoisoned")].status}`)).NotTo(Equal("True"), name)
		}
		apply(ns, execution("after", "s-00", "echo after"))
		waitFor(ns, "execution/after", "jsonpath={.status.phase}=Succeeded", 2*time.Minute)
		Expect(field(ns, "execution/after", "{.status.stdout}")).To(Equal("after\n"))
		AddReportEntry("control restart", fmt.Sprintf("agent SIGKILLed under %d running commands, %d of which ended while it was down: all reported",
			restartCommands, endWhileDown), ReportEntryVisibilityAlways)
	})
})
