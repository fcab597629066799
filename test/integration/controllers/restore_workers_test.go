//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

// gatedCopies is the fake daemon whose copies into containers (restores) wait until gate is closed or their
// context ends; started counts those that began.
type gatedCopies struct {
	*fake.Driver
	gate    chan struct{}
	started atomic.Int32
}

func (d *gatedCopies) CopyTo(ctx context.Context, name, dir string, tar io.Reader) error {
	d.started.Add(1)
	select {
	case <-d.gate:
	case <-ctx.Done():
		return dd.NewError(dd.KindUncertain, dd.PhaseCopy, name, "the outcome is unknown")
	}
	return d.Driver.CopyTo(ctx, name, dir, tar)
}

var _ = Describe("Restores off the reconcile workers", func() {
	It("lets slow restores delay no other Sandbox's activeDeadlineSeconds, and the restored Sandboxes go on when their copies end", func() {
		files := map[string]string{"notes.txt": "hello", "src/": "", "src/main.go": "package main"}
		node := newNode()
		docker := &gatedCopies{Driver: newDocker(node), gate: make(chan struct{})}
		a := startStoringAgent(node, docker.Driver, func(o *agent.Options) { o.Driver = docker }) // two workers
		ns := newNamespace()
		capturedSession(ns, "snap", a, files)
		var slow []*dsv1alpha1.Sandbox
		for i := range 3 {
			sbx := restoring(ns, fmt.Sprintf("slow-%d", i), a.node, "snap")
			create(sbx)
			slow = append(slow, sbx)
		}
		Eventually(docker.started.Load).Should(BeNumerically(">=", 2), "copies hold every worker the old way")

		timed := sandbox(ns, "timed", a.node)
		timed.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
		created := time.Now()
		create(timed)

		Eventually(condition(timed, dsv1alpha1.ConditionStalled), 15*time.Second).Should(Equal("True/DeadlineExceeded"))
		Expect(time.Since(created)).To(BeNumerically("<", 15*time.Second), "its deadline is 3 s; the copies wait for as long as the test says")
		Expect(phase(timed)()).To(Equal(dsv1alpha1.SandboxFailed))
		for _, sbx := range slow {
			Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("False/Restoring"), sbx.Name)
			Expect(message(sbx, dsv1alpha1.ConditionReady)).To(ContainSubstring(`Checkpoint "snap"`))
		}
		Expect(docker.started.Load()).To(BeEquivalentTo(2), "two restores at once on the node; the third waits its turn")

		close(docker.gate)
		for _, sbx := range slow {
			Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"), sbx.Name)
			Expect(condition(sbx, dsv1alpha1.ConditionRestored)()).To(Equal("True/Restored"))
			Expect(workspaceFiles(a.docker, sbx)).To(Equal(files))
		}
	})
})
