//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var quickstart = filepath.Join("..", "..", "hack", "quickstart.sh")

// quickstartCommands are the kubectl lines of hack/quickstart.sh.
func quickstartCommands() []string {
	data, err := os.ReadFile(quickstart)
	Expect(err).NotTo(HaveOccurred())
	var commands []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "kubectl ") {
			commands = append(commands, line)
		}
	}
	return commands
}

var _ = Describe("The README quickstart", func() {
	It("shows the very commands that hack/quickstart.sh runs", func() {
		readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
		Expect(err).NotTo(HaveOccurred())
		commands := quickstartCommands()
		Expect(commands).NotTo(BeEmpty())
		for _, command := range commands {
			Expect(string(readme)).To(ContainSubstring(command))
		}
	})

	It("brings every sample up, Running or Succeeded, with the Python run's Redis answer in status", func(ctx SpecContext) {
		cmd := exec.CommandContext(ctx, "bash", quickstart)
		cmd.Env = append(os.Environ(),
			"KUBECONFIG="+cp.Kubeconfig,
			"PATH="+filepath.Dir(cp.KubectlPath)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "hack/quickstart.sh:\n%s", out)
		DeferCleanup(func() {
			_, err := kubectl("delete", "-f", filepath.Join("..", "..", "config", "samples"), "--timeout=120s")
			Expect(err).NotTo(HaveOccurred())
			Expect(containers("default", "", "")).To(BeEmpty())
		})

		phases := field("default", "sandboxes", "{range .items[*]}{.metadata.name}={.status.phase}{'\\n'}{end}")
		for _, line := range strings.Fields(phases) {
			Expect(line).To(Or(HaveSuffix("=Running"), HaveSuffix("=Succeeded")))
		}
		Expect(phases).To(ContainSubstring("python-run=Succeeded"))
		Expect(field("default", "sandbox/python-run", "{.status.result.outputTail}")).
			To(ContainSubstring("redis says: hello from redis"))
		Expect(field("default", "sandbox/hello", "{.status.result.outputTail}")).To(ContainSubstring("hello from"))
		Expect(field("default", "sandbox/web-client", "{.status.result.outputTail}")).To(ContainSubstring("ok"))
	}, SpecTimeout(4*time.Minute))
})
