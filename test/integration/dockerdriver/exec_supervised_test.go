//go:build integration

package dockerdriver_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/hostvolume"
	"github.com/dockside-dev/dockside/internal/supervision"
)

// holderImage holds the supervisor (hack/build-images.sh).
const holderImage = "dockside.dev/holder:local"

var _ = Describe("Exec under the supervisor", func() {
	var target dd.ContainerSpec
	BeforeEach(func(ctx SpecContext) {
		o := newOwner("supervised")
		perSandbox := o
		perSandbox.Generation = 0
		runVol, err := driver.EnsureVolume(ctx, dd.VolumeSpec{Name: dd.Name(perSandbox, dsv1alpha1.RoleRun, ""), Owner: perSandbox, Role: dsv1alpha1.RoleRun, SizeBytes: 4 << 20})
		Expect(err).NotTo(HaveOccurred())
		target = spec(o, dsv1alpha1.RolePrimary, "")
		target.Mounts = []dd.VolumeMount{{Volume: runVol.Name, Target: dd.RunMountPath}}
		Expect(run(ctx, target).RunVolume).NotTo(BeEmpty())
	})

	// supervised is a supervised request for script whose ExecRef lands in ref.
	supervised := func(script string, timeout time.Duration, ref *dd.ExecRef) dd.ExecRequest {
		return dd.ExecRequest{
			Command: []string{"sh", "-c", script}, Timeout: timeout, OutputLimit: 256 << 10, KillSurvivors: true,
			Supervised: &dd.Supervision{Image: holderImage, Key: "run-" + randomHex(4), Created: func(r dd.ExecRef) error {
				*ref = r
				return nil
			}},
		}
	}

	// archiveReads counts Docker's reads of the container's files (its archive-path events) while f runs.
	archiveReads := func(ctx context.Context, f func()) int {
		since := time.Now()
		f()
		msgs, errs := docker.Events(ctx, events.ListOptions{
			Since: since.Format(time.RFC3339Nano), Until: time.Now().Add(time.Second).Format(time.RFC3339Nano),
			Filters: filters.NewArgs(filters.Arg("container", target.Name), filters.Arg("event", "archive-path")),
		})
		n := 0
		for {
			select {
			case <-msgs:
				n++
			case err := <-errs:
				Expect(err).To(MatchError(io.EOF))
				return n
			}
		}
	}
	It("returns the exit code from Docker and the output the supervisor kept", func(ctx SpecContext) {
		var ref dd.ExecRef
		req := supervised("read line; echo out $line; echo err >&2; exit 3", 30*time.Second, &ref)
		req.Stdin = []byte("in\n")
		res, err := driver.Exec(ctx, target.Name, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(ref.ID).NotTo(BeEmpty())
		Expect(res.Reason).To(Equal(dd.ExecCompleted))
		Expect(res.ExitCode).To(Equal(3))
		Expect(string(res.Stdout)).To(Equal("out in\n"))
		Expect(string(res.Stderr)).To(Equal("err\n"))
		Expect(res.ContainerKilled).To(BeFalse())
	})

	It("feeds the command an Execution's largest input whole, NUL bytes included, without its variable", func(ctx SpecContext) {
		in := make([]byte, dd.MaxSupervisedStdin)
		for i := range in {
			in[i] = byte(i % 251) // a period prime to 64 KiB, so that a chunk dropped or repeated changes the sum
		}
		var ref dd.ExecRef
		req := supervised("sha256sum; env | grep -c "+supervision.StdinEnv+" || true", 30*time.Second, &ref)
		req.Stdin = in
		res, err := driver.Exec(ctx, target.Name, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(0), string(res.Stderr))
		Expect(string(res.Stdout)).To(Equal(fmt.Sprintf("%x  -\n0\n", sha256.Sum256(in))))
	})

	It("reads the run's files back only when the command printed something", func(ctx SpecContext) {
		var ref dd.ExecRef
		Expect(archiveReads(ctx, func() {
			res, err := driver.Exec(ctx, target.Name, supervised("true", 30*time.Second, &ref))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Stdout).To(BeEmpty())
			Expect(res.Stderr).To(BeEmpty())
		})).To(BeZero(), "nothing printed: nothing read back")
		Expect(archiveReads(ctx, func() {
			res, err := driver.Exec(ctx, target.Name, supervised("echo err >&2", 30*time.Second, &ref))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Stdout).To(BeEmpty())
			Expect(string(res.Stderr)).To(Equal("err\n"))
		})).To(Equal(1), "stderr alone is read back")
	})

	It("reads the output on the run volume's host side, with no archive read, when it may", func(ctx SpecContext) {
		Expect(hostvolume.Access()).To(BeTrue(), "these tests run as root on the Docker host, with openat2")
		hostSide, err := dd.New(ctx, dd.Options{Node: node, HostVolumes: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(hostSide.Close)
		var ref dd.ExecRef
		Expect(archiveReads(ctx, func() {
			req := supervised("echo out; echo err >&2; head -c 300 /dev/zero; exit 4", 30*time.Second, &ref)
			req.OutputLimit = 200
			res, err := hostSide.Exec(ctx, target.Name, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(4))
			Expect(res.Stdout).To(HaveLen(200), "the cap of the request")
			Expect(string(res.Stdout[:4])).To(Equal("out\n"))
			Expect(res.StdoutCut).To(Equal(int64(104)))
			Expect(string(res.Stderr)).To(Equal("err\n"))
		})).To(BeZero())
		// A run whose folder the command replaced with a link is read through the archive API, which finds no
		// folder there: no output, and nothing followed on the host.
		res, err := hostSide.Exec(ctx, target.Name, supervised("echo gone; d=$(dirname $(ls -d "+dd.RunMountPath+"/runs/*/stdout)); rm -r $d; ln -s /etc $d", 30*time.Second, &ref))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(0))
		Expect(res.Stdout).To(BeEmpty())
	})

	It("keeps the first 256 KiB of each stream and counts the rest", func(ctx SpecContext) {
		var ref dd.ExecRef
		res, err := driver.Exec(ctx, target.Name, supervised("head -c 1048576 /dev/zero; head -c 10 /dev/zero >&2", 30*time.Second, &ref))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(0))
		Expect(res.Stdout).To(HaveLen(256 << 10))
		Expect(res.StdoutCut).To(Equal(int64(768 << 10)))
		Expect(res.Stderr).To(HaveLen(10))
		Expect(res.StderrCut).To(BeZero())
	})

	It("reads back at most the cap of a sparse 8 GiB output file, within the deadline", func(ctx SpecContext) {
		var ref dd.ExecRef
		const timeout = 10 * time.Second
		start := time.Now()
		res, err := driver.Exec(ctx, target.Name, supervised("echo kept; truncate -s 8589934592 "+dd.RunMountPath+"/runs/*/stdout", timeout, &ref))
		took := time.Since(start)
		GinkgoWriter.Printf("the sparse 8 GiB stdout took %v to run and read back\n", took)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(0))
		Expect(res.Stdout).To(HaveLen(256 << 10))
		Expect(string(res.Stdout[:5])).To(Equal("kept\n"))
		Expect(res.StdoutCut).To(Equal(int64(8<<30 - 256<<10)))
		Expect(res.CutUnread).To(BeTrue(), "what follows the sparse file in the archive was not read")
		Expect(took).To(BeNumerically("<", timeout+20*time.Second), "the read-back is bounded in bytes and time")
	})

	It("goes on when its caller stops waiting, and is resumed with its exit code and output", func(ctx SpecContext) {
		var ref dd.ExecRef
		req := supervised("sleep 2; echo done; exit 7", time.Minute, &ref)
		cctx, cancel := context.WithCancel(ctx)
		created := req.Supervised.Created
		req.Supervised.Created = func(r dd.ExecRef) error {
			time.AfterFunc(500*time.Millisecond, cancel) // once it is made: the wait, not the start, is cut
			return created(r)
		}
		res, err := driver.Exec(cctx, target.Name, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Reason).To(Equal(dd.ExecCanceled))
		Expect(res.ContainerKilled).To(BeFalse())
		res, err = driver.ResumeExec(ctx, target.Name, ref, req, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Reason).To(Equal(dd.ExecCompleted))
		Expect(res.ExitCode).To(Equal(7))
		Expect(string(res.Stdout)).To(Equal("done\n"))
		By("once ended, it is still found, with the same outcome")
		again, err := driver.ResumeExec(ctx, target.Name, ref, req, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.ExitCode).To(Equal(7))
		Expect(string(again.Stdout)).To(Equal("done\n"))
		Expect(driver.ResumeExec(ctx, target.Name, dd.ExecRef{ID: strings.Repeat("0", 64)}, req, time.Minute)).Error().
			To(Satisfy(dd.IsNotFound), "an exec Docker does not know")
	})

	It("kills the command's process group at the deadline when nobody waits", func(ctx SpecContext) {
		var ref dd.ExecRef
		req := supervised("sleep 600 & sleep 600; echo never", time.Second, &ref) // the supervisor's: 3 s
		cctx, cancel := context.WithCancel(ctx)
		created := req.Supervised.Created
		req.Supervised.Created = func(r dd.ExecRef) error {
			time.AfterFunc(200*time.Millisecond, cancel) // nobody waits for it any more
			return created(r)
		}
		res, err := driver.Exec(cctx, target.Name, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Reason).To(Equal(dd.ExecCanceled))
		Eventually(func(g Gomega) {
			ins, err := docker.ContainerExecInspect(ctx, ref.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ins.Running).To(BeFalse())
			g.Expect(ins.ExitCode).To(Equal(137))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		top, err := docker.ContainerTop(ctx, target.Name, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(fmt.Sprint(top.Processes)).NotTo(ContainSubstring("sleep 600"), "the group was killed, the background sleep too")
		info, err := driver.ObserveContainer(ctx, target.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State).To(Equal(dd.StateRunning), "the container itself is left to the agent")
	})

	It("kills the container at the host's deadline, as an attached exec", func(ctx SpecContext) {
		var ref dd.ExecRef
		start := time.Now()
		res, err := driver.Exec(ctx, target.Name, supervised("echo early; sleep 30; echo late", time.Second, &ref))
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
		Expect(res.Reason).To(Equal(dd.ExecDeadlineExceeded))
		Expect(res.ContainerKilled).To(BeTrue())
		Expect(string(res.Stdout)).To(Equal("early\n"), "what it printed before the deadline is kept")
		info, err := driver.ObserveContainer(ctx, target.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State).To(Equal(dd.StateExited), "the paused container was killed")
	})

	It("kills the container when a detached child outlives the command", func(ctx SpecContext) {
		var ref dd.ExecRef
		res, err := driver.Exec(ctx, target.Name, supervised("setsid sleep 600 >/dev/null 2>&1 </dev/null & echo ok", 30*time.Second, &ref))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Survivors).To(BeNumerically(">", 0))
		Expect(res.ContainerKilled).To(BeTrue())
	})
})
