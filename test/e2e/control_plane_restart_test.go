//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/test/internal/controlprocs"
)

// The control-plane restart specs' population: a session each, half of whose commands end while the
// component is down (issue 30).
const (
	cpRestartSessions = 6
	cpEndWhileDown    = 3
	// cpHeldDown is the least time the component stays down: past client-go's 10 s renew deadline, after which
	// an agent that gave its node up for want of renewals would have exited.
	cpHeldDown = 20 * time.Second
)

// restartedControlPlane holds the control-plane processes the specs started again, by program, which the
// suite stops before its control plane (whose own processes they replace). A process restarted twice is held
// by its last start: Kill ended the one before.
var restartedControlPlane = map[string]*controlprocs.Process{}

var _ = Describe("A control plane restarted under running commands", Label("cp-restart"), func() {
	DescribeTable("costs no command and no session: the agent runs on and every command reports its exit code and output",
		func(component string, pidOf func() (int, error)) {
			ns := newNamespace("cprestart")
			DeferCleanup(deleteAllIn, ns) // runs last: after the component runs again
			logStart := logSize()
			DeferCleanup(func() { printAgentLogOnFailure(logStart) })

			// Each prints its name once let go, and exits with a code of its own.
			gatedCommands(ns, cpRestartSessions, func(i int) string { return fmt.Sprintf("echo done-%02d; exit %d", i, i%3) })
			started, all := primaryStarts(ns), containers(ns, "", "")
			agentPid := agent.Pid()

			By(component + " killed; half the commands end while it is down")
			pid, err := pidOf()
			Expect(err).NotTo(HaveOccurred())
			var down *controlprocs.Stopped
			var stoppedAt time.Time
			var downFor time.Duration
			start := func() {
				downFor = time.Since(stoppedAt)
				p, err := down.Start(filepath.Join(filepath.Dir(agent.Log), component+".log"))
				Expect(err).NotTo(HaveOccurred())
				restartedControlPlane[component] = p
				down = nil
			}
			DeferCleanup(func() { // the suite goes on with its control plane, whatever failed
				if down != nil {
					start()
				}
			})
			down, err = controlprocs.Kill(pid)
			Expect(err).NotTo(HaveOccurred())
			stoppedAt = time.Now()
			letGo(ns, 0, cpEndWhileDown)
			time.Sleep(time.Until(stoppedAt.Add(cpHeldDown)))
			exited, err := agent.Exited()
			Expect(exited).To(BeFalse(), "the agent exited while %s was down: %v", component, err)

			By(component + " started again with the same arguments, certificates and data")
			start()
			Eventually(func() (string, error) { return kubectl("get", "--raw", "/readyz") }).
				WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Equal("ok"), "the API server serves again")
			letGo(ns, cpEndWhileDown, cpRestartSessions)

			By("each command reports its exit code and output, and ran once")
			for i := range cpRestartSessions {
				name := fmt.Sprintf("execution/x-%02d", i)
				Eventually(func() string { return field(ns, name, "{.status.phase}") }).WithTimeout(5*time.Minute).WithPolling(time.Second).
					Should(BeElementOf("Succeeded", "Failed"), name)
				Expect(field(ns, name, "{.status.exitCode}")).To(Equal(fmt.Sprint(i%3)), name)
				Expect(field(ns, name, "{.status.stdout}")).To(Equal(fmt.Sprintf("done-%02d\n", i)), name)
				Expect(field(ns, name, "{.status.sandboxKilled}")).NotTo(Equal("true"), name)
				Expect(docker("exec", onlyContainerByLabel(ns, fmt.Sprintf("s-%02d", i)), "cat", "/workspace/runs")).To(Equal("ran"), name)
			}

			By("the same agent, the same containers and no more, every session Ready and unpoisoned, and a new command runs")
			exited, err = agent.Exited()
			Expect(exited).To(BeFalse(), "the agent exited: %v", err)
			Expect(agent.Pid()).To(Equal(agentPid))
			log := logFrom(logStart)
			Expect(log).To(ContainSubstring("The API server does not answer"))
			Expect(log).NotTo(ContainSubstring("leader election lost"))
			Expect(containers(ns, "", "")).To(ConsistOf(all), "no container made again; the namespace's containers:\n%s", containerTable(ns))
			expectSessionsUnharmed(ns, started)
			AddReportEntry(component+" restart", fmt.Sprintf("%s down %s under %d running commands, %d of which ended meanwhile: all reported once",
				component, downFor.Round(time.Second), cpRestartSessions, cpEndWhileDown), ReportEntryVisibilityAlways)
		},
		Entry("kube-apiserver", Label("apiserver-restart"), "kube-apiserver", func() (int, error) {
			return controlprocs.APIServer(cp.Config.Host)
		}),
		Entry("etcd", Label("etcd-restart"), "etcd", func() (int, error) {
			apiServer, err := controlprocs.APIServer(cp.Config.Host)
			if err != nil {
				return 0, err
			}
			return controlprocs.Etcd(apiServer)
		}),
	)
})

// stopRestartedControlPlane stops what the specs started again, kube-apiserver before etcd as the control
// plane stops its own.
func stopRestartedControlPlane() {
	GinkgoHelper()
	for _, component := range []string{"kube-apiserver", "etcd"} {
		if p := restartedControlPlane[component]; p != nil {
			Expect(p.Stop()).To(Succeed(), component)
		}
	}
}
