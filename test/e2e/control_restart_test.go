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
		logStart := logSize()
		DeferCleanup(func() { printAgentLogOnFailure(logStart) })
		// Each prints some 20 KB once let go, and exits with a code of its own.
		gatedCommands(ns, restartCommands, func(i int) string {
			return fmt.Sprintf("echo done-%02d; seq 1 4000; echo to-stderr >&2; exit %d", i, i%4)
		})
		started := primaryStarts(ns)

		By("the agent SIGKILLed; half the commands end while it is down")
		restart := killAgent()
		letGo(ns, 0, endWhileDown)
		restart()

		By("the other half end once the next agent runs")
		letGo(ns, endWhileDown, restartCommands)

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
		expectSessionsUnharmed(ns, started)
		AddReportEntry("control restart", fmt.Sprintf("agent SIGKILLed under %d running commands, %d of which ended while it was down: all reported",
			restartCommands, endWhileDown), ReportEntryVisibilityAlways)
	})
})

// gatedCommands makes n Sandboxes s-00, s-01... in ns and runs in each an Execution x-00, x-01... that notes
// it ran in /workspace/runs (a command run twice notes it twice), waits for /workspace/go (letGo), then runs
// then(i); it returns once each command runs in Docker.
func gatedCommands(ns string, n int, then func(i int) string) {
	GinkgoHelper()
	var sandboxes, executions strings.Builder
	for i := range n {
		fmt.Fprintf(&sandboxes, "---\napiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: s-%02d\nspec:\n  image: dockside.dev/busybox:local\n  network:\n    mode: None\n", i)
		fmt.Fprintf(&executions, "---\n%s  timeoutSeconds: 600\n", execution(fmt.Sprintf("x-%02d", i), fmt.Sprintf("s-%02d", i),
			"echo ran >> /workspace/runs; while [ ! -e /workspace/go ]; do sleep 0.2; done; "+then(i)))
	}
	apply(ns, sandboxes.String())
	for i := range n {
		waitFor(ns, fmt.Sprintf("sandbox/s-%02d", i), "condition=Ready", 5*time.Minute)
	}
	apply(ns, executions.String())
	for i := range n {
		name := fmt.Sprintf("execution/x-%02d", i)
		waitFor(ns, name, "jsonpath={.status.phase}=Running", 5*time.Minute)
		Eventually(func() string { return field(ns, name, "{.status.exec.id}") }).
			WithTimeout(time.Minute).ShouldNot(BeEmpty(), "%s has its exec recorded", name)
	}
}

// letGo lets the gated commands of s-from up to s-to (excluded) go on, through Docker alone, and waits until
// they no longer wait.
func letGo(ns string, from, to int) {
	GinkgoHelper()
	for i := from; i < to; i++ {
		_, err := docker("exec", onlyContainerByLabel(ns, fmt.Sprintf("s-%02d", i)), "touch", "/workspace/go")
		Expect(err).NotTo(HaveOccurred())
	}
	for i := from; i < to; i++ {
		primary := onlyContainerByLabel(ns, fmt.Sprintf("s-%02d", i))
		Eventually(func() (string, error) { return docker("top", primary) }).WithTimeout(time.Minute).
			ShouldNot(ContainSubstring("sleep 0.2"), "s-%02d's command goes on", i)
	}
}

// killAgent SIGKILLs the suite's agent and returns what starts it again; a spec that ends before calling it
// has a cleanup call it, so that the suite's agent runs for the cleanups and specs after.
func killAgent() (restart func()) {
	GinkgoHelper()
	down := true
	restart = func() {
		if down {
			Expect(agent.Restart()).To(Succeed())
			down = false
		}
	}
	DeferCleanup(restart)
	agent.Kill()
	return restart
}

// expectSessionsUnharmed checks that the Sandboxes of started kept their primaries, are Ready and unpoisoned,
// and that a new command runs in s-00.
func expectSessionsUnharmed(ns string, started map[string]string) {
	GinkgoHelper()
	Expect(primaryStarts(ns)).To(Equal(started))
	for name := range started {
		waitFor(ns, "sandbox/"+name, "condition=Ready", time.Minute)
		Expect(field(ns, "sandbox/"+name, `{.status.conditions[?(@.type=="TopologyPoisoned")].status}`)).NotTo(Equal("True"), name)
	}
	apply(ns, execution("after", "s-00", "echo after"))
	waitFor(ns, "execution/after", "jsonpath={.status.phase}=Succeeded", 2*time.Minute)
	Expect(field(ns, "execution/after", "{.status.stdout}")).To(Equal("after\n"))
}
