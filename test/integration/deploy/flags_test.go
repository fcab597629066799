//go:build integration

package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// A flag the agent does not know makes it exit at once: every agent pod would crash-loop and every systemd
// unit restart forever. So the flags that the deployment files pass are checked against the real binary.
var _ = Describe("the flags that the deployment files pass", Ordered, func() {
	var known map[string]bool

	BeforeAll(func() {
		bin := filepath.Join(GinkgoT().TempDir(), "dockside-agent")
		build := exec.Command("go", "build", "-o", bin, "./cmd/dockside-agent")
		build.Dir = repoRoot
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "building the agent: %s", out)
		// -help prints every flag, one "  -name ..." line each, and exits 0.
		usage, err := exec.Command(bin, "-help").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(usage))
		known = map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^  -([\w.-]+)`).FindAllStringSubmatch(string(usage), -1) {
			known[m[1]] = true
		}
		Expect(known).To(HaveKey("node-name"), "the agent's usage was not understood: %s", usage)
	})

	It("are known to the agent: the DaemonSet's args", func() {
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "agent", "daemonset.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var ds appsv1.DaemonSet
		Expect(yaml.Unmarshal(data, &ds)).To(Succeed())
		for _, arg := range ds.Spec.Template.Spec.Containers[0].Args {
			Expect(known).To(HaveKey(flagName(arg)), "the DaemonSet passes %s", arg)
		}
	})

	It("are known to the agent: the systemd unit's ExecStart", func() {
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "systemd", "dockside-agent.service"))
		Expect(err).NotTo(HaveOccurred())
		unit := strings.ReplaceAll(string(data), "\\\n", " ") // continuation lines
		execStart := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindStringSubmatch(unit)
		Expect(execStart).NotTo(BeNil(), "the unit has no ExecStart")
		args := strings.Fields(execStart[1])[1:]
		Expect(args).NotTo(BeEmpty())
		for _, arg := range args {
			Expect(known).To(HaveKey(flagName(arg)), "the unit passes %s", arg)
		}
	})
})

// flagName is "node-name" for "--node-name=x" (or "-node-name").
func flagName(arg string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name
}
