//go:build integration

package dockerdriver_test

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// A session whose command is a shell keeps the orphans of killed processes as zombies, each holding a pid;
// under the daemon's init they are reaped (docs/design/decisions/0027-primaries-run-under-an-init.md).
var _ = Describe("A container under the daemon's init", func() {
	It("reaps the children of an exec's killed leftovers, so they free the container's pids", func(ctx SpecContext) {
		info, err := driver.Init(ctx)
		Expect(err).NotTo(HaveOccurred())
		ok, why := info.Available()
		Expect(ok).To(BeTrue(), why)

		session := spec(newOwner("init"), dsv1alpha1.RolePrimary, "", "sh")
		session.KeepStdinOpen, session.Init, session.Resources.PIDs = true, true, 24
		Expect(run(ctx, session).Init).To(BeTrue())

		var out, errOut bytes.Buffer
		res, err := driver.StreamExec(ctx, session.Name, dd.StreamExecRequest{
			Command: []string{"sh", "-c", "i=0; while [ $i -lt 40 ]; do sleep 600 & i=$((i+1)); done; echo forked"},
			Stdout:  &out, Stderr: &errOut,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(errOut.String()).To(ContainSubstring("can't fork"), "the forks reached the limit")
		Expect(res.Ended).To(BeNumerically(">", 10), "what it left behind was killed")

		// Each exec here is a pid of its own, and the init and the shell two more.
		Eventually(func(g Gomega) int {
			r := sh(ctx, session.Name, "cat /sys/fs/cgroup/pids/pids.current 2>/dev/null || cat /sys/fs/cgroup/pids.current", 10*time.Second)
			g.Expect(r.ExitCode).To(BeZero(), string(r.Stderr))
			n, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
			g.Expect(err).NotTo(HaveOccurred())
			return n
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(BeNumerically("<=", 5), "no zombie holds a pid")
	})
})
