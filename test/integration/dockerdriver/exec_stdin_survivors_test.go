//go:build integration

package dockerdriver_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

var _ = Describe("Exec with stdin and KillSurvivors", func() {
	var target dd.ContainerSpec
	BeforeEach(func(ctx SpecContext) {
		target = spec(newOwner("exec-in"), dsv1alpha1.RolePrimary, "")
		run(ctx, target)
	})

	It("writes Stdin to the command and closes it", func(ctx SpecContext) {
		input := strings.Repeat("line\n", 20000) // 100 KB: more than a pipe holds, so the write must keep up
		res, err := driver.Exec(ctx, target.Name, dd.ExecRequest{
			Command: []string{"wc", "-l"}, Stdin: []byte(input), Timeout: 10 * time.Second, OutputLimit: 1024,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Reason).To(Equal(dd.ExecCompleted))
		Expect(strings.TrimSpace(string(res.Stdout))).To(Equal("20000"))
	})

	It("gives a command without Stdin end-of-file at once", func(ctx SpecContext) {
		res, err := driver.Exec(ctx, target.Name, dd.ExecRequest{Command: []string{"cat"}, Timeout: 5 * time.Second, OutputLimit: 1024})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Reason).To(Equal(dd.ExecCompleted))
		Expect(res.ExitCode).To(Equal(0))
	})

	It("leaves the container running when the command started nothing that outlives it", func(ctx SpecContext) {
		res, err := driver.Exec(ctx, target.Name, dd.ExecRequest{
			Command: []string{"sh", "-c", "sleep 0.1 & wait; echo done"}, Timeout: 5 * time.Second, OutputLimit: 1024, KillSurvivors: true,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Survivors).To(BeZero())
		Expect(res.ContainerKilled).To(BeFalse())
		info, err := driver.ObserveContainer(ctx, target.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State).To(Equal(dd.StateRunning))
	})

	It("kills the container when a detached child outlives the command", func(ctx SpecContext) {
		res, err := driver.Exec(ctx, target.Name, dd.ExecRequest{
			Command: []string{"sh", "-c", "(sleep 30 &) ; echo started"}, Timeout: 5 * time.Second, OutputLimit: 1024, KillSurvivors: true,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Reason).To(Equal(dd.ExecCompleted))
		Expect(string(res.Stdout)).To(Equal("started\n"))
		Expect(res.Survivors).To(Equal(1))
		Expect(res.ContainerKilled).To(BeTrue())
		info, err := driver.ObserveContainer(ctx, target.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State).To(Equal(dd.StateExited))
	})
})
