//go:build integration

package dockerdriver_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// A session's PID 1 is a shell waiting on its standard input. Were that input a pipe, any process of the
// container could open /proc/1/fd/0 for writing and have PID 1 run a command after the Execution that wrote
// it has ended, past the survivor check (docs/design/executions.md).
var _ = Describe("A session's PID 1 and its standard input", func() {
	It("runs nothing that an exec writes to /proc/1/fd/0", func(ctx SpecContext) {
		session := spec(newOwner("pid1-in"), dsv1alpha1.RolePrimary, "", "sh")
		session.KeepStdinOpen = true
		session.Tmpfs = []dd.TmpfsMount{{Target: "/scratch", SizeBytes: 1 << 20}} // writable: the root is read-only
		run(ctx, session)

		res, err := driver.Exec(ctx, session.Name, dd.ExecRequest{
			Command: []string{"sh", "-c", `echo "mkdir /scratch/planted" > /proc/1/fd/0 && echo written`},
			Timeout: 10 * time.Second, OutputLimit: 1024, KillSurvivors: true,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(res.Stdout)).To(Equal("written\n"), "the write itself succeeds: it goes to the terminal's output")
		Expect(res.Survivors).To(BeZero())
		proof, err := driver.Exec(ctx, session.Name, dd.ExecRequest{
			Command: []string{"mkdir", "/scratch/proof"}, Timeout: 10 * time.Second, OutputLimit: 1024,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(proof.ExitCode).To(BeZero(), "the planted command could have made its folder")

		// Had PID 1 read the line, the folder would be there by the time a second exec looks (a shell runs a
		// line as soon as it reads it); give it ample time on a loaded machine all the same.
		Consistently(func(g Gomega) {
			look, err := driver.Exec(ctx, session.Name, dd.ExecRequest{
				Command: []string{"sh", "-c", "test -e /scratch/planted && echo planted || echo absent"}, Timeout: 10 * time.Second, OutputLimit: 1024,
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(look.Stdout)).To(Equal("absent\n"))
		}).WithTimeout(3 * time.Second).WithPolling(time.Second).Should(Succeed())
		info, err := driver.ObserveContainer(ctx, session.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State).To(Equal(dd.StateRunning), "the session's shell still waits")
	})
})
