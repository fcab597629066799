package checkpoint

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/topology"
)

// A capture copies out through the workspace holder, which a new session gets on the pass after it came
// Ready: until it runs the Checkpoint waits, and Docker's silence is retried, never a failure.
func TestCaptureWaitsForTheWorkspaceHolder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	docker := fake.New("n1")
	docker.AddImage("holder", dd.ImageInfo{})
	r := &Reconciler{Driver: docker, Recorder: events.NewFakeRecorder(10), Options: Options{Node: "n1"}}
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "s", UID: "uid-s"}}
	ckpt := &dsv1alpha1.Checkpoint{}

	wait, res, err := r.awaitHolder(ctx, ckpt, sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wait).To(BeTrue(), "no holder yet")
	g.Expect(res.RequeueAfter).To(Equal(holderRetry))
	g.Expect(ckpt.Status.Phase).To(Equal(dsv1alpha1.CheckpointCapturing))
	g.Expect(readyCondition(g, ckpt)).To(Equal(`WaitingForSandbox: waiting for the workspace holder of Sandbox "s" to start`))

	names := topology.NamesOf(sbx)
	holder, err := docker.EnsureContainer(ctx, dd.ContainerSpec{Name: names.Holder(), Owner: names.WorkspaceOwner(),
		Role: dsv1alpha1.RoleHolder, Image: "holder", Resources: dd.Resources{MemoryBytes: 8 << 20, NanoCPUs: 1e9, PIDs: 16}})
	g.Expect(err).NotTo(HaveOccurred())
	wait, _, err = r.awaitHolder(ctx, ckpt, sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wait).To(BeTrue(), "made, not started")

	g.Expect(docker.StartContainer(ctx, holder.Name)).To(Succeed())
	wait, _, err = r.awaitHolder(ctx, ckpt, sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wait).To(BeFalse(), "running: the capture goes on")

	docker.SetUnavailable(true)
	wait, _, err = r.awaitHolder(ctx, ckpt, sbx)
	g.Expect(wait).To(BeTrue())
	g.Expect(dd.IsUnavailable(err)).To(BeTrue(), "returned for backoff")
	g.Expect(readyCondition(g, ckpt)).To(HavePrefix(dsv1alpha1.ReasonDockerUnavailable))
}
