//go:build e2e

package e2e

import (
	"errors"
	"io"
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// streamEnd bounds how long the client's stream may take to end once the agent serving it is killed: the
// kernel closes the agent's connections at once, so this is margin for a loaded machine, not a wait.
const streamEnd = 2 * time.Minute

var _ = Describe("An agent killed during a streaming exec", Label("exec-restart"), func() {
	It("ends the client's stream with an error it can read, keeps the Sandbox Ready, and the next exec works", func() {
		ns := newNamespace("execrestart")
		DeferCleanup(deleteAllIn, ns) // runs last: after the agent runs again
		logStart := logSize()
		DeferCleanup(func() { printAgentLogOnFailure(logStart) })
		apply(ns, "apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata: {name: box}\nspec: {image: dockside.dev/busybox:local}\n")
		waitFor(ns, "sandbox/box", "condition=Ready", 3*time.Minute)
		dataPlaneServes(ns, "box")
		started := primaryStarts(ns)

		By("a streaming exec under way: kubectl dockside exec -i echoes its input")
		cmd := pluginCommand("exec", "-n", ns, "-i", "box", "--", "sh", "-c", "echo first; cat")
		stdin, err := cmd.StdinPipe()
		Expect(err).NotTo(HaveOccurred())
		lines, stderr := startLines(cmd)
		DeferCleanup(func() { _ = cmd.Process.Kill() }) // a client that hung is the spec's failure, not the suite's
		Eventually(lines, time.Minute).Should(Receive(Equal("first")), "stderr: %s", stderr.String())
		_, err = io.WriteString(stdin, "echoed\n")
		Expect(err).NotTo(HaveOccurred())
		Eventually(lines, time.Minute).Should(Receive(Equal("echoed")), "the stream carries input and output both ways")

		By("the agent SIGKILLed: the client's stream ends, with a message")
		restart := killAgent()
		Eventually(func() bool {
			select {
			case _, open := <-lines:
				return !open
			default:
				return false
			}
		}).WithTimeout(streamEnd).WithPolling(100*time.Millisecond).Should(BeTrue(), "the client's output closes; stderr: %s", stderr.String())
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		var exit *exec.ExitError
		Eventually(waited, streamEnd).Should(Receive(&err), "the client exits")
		Expect(errors.As(err, &exit)).To(BeTrue(), "the client exits with a code: %v", err)
		Expect(exit.ExitCode()).To(Equal(125), "the plugin's code for a failure of its own or the server's; stderr: %s", stderr.String())
		Expect(stderr.String()).To(ContainSubstring("the connection to the Sandbox broke before the command ended"))

		By("the agent started again: the same Sandbox Ready, and a new exec runs")
		restart()
		waitFor(ns, "sandbox/box", "condition=Ready", 2*time.Minute)
		Expect(primaryStarts(ns)).To(Equal(started), "the Sandbox's primary is the one the exec ran in")
		dataPlaneServes(ns, "box")
		res := dockside("exec", "", "-n", ns, "box", "--", "sh", "-c", "echo again; exit 6")
		Expect(res.code).To(Equal(6), res.stderr)
		Expect(res.stdout).To(Equal("again\n"))
		primary := onlyContainerByLabel(ns, "box")
		Eventually(func() (string, error) { return docker("top", primary, "-o", "pid,args") }).WithTimeout(time.Minute).
			ShouldNot(ContainSubstring("cat"), "the killed stream's command ended with its input")
		deleteAndExpectGone(ns, "box")
	})
})
