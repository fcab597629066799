package checkpoint

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/dockerdriver/metered"
	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/checkpointregistry"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/testutil/memregistry"
	"github.com/dockside-dev/dockside/internal/testutil/spans"
	"github.com/dockside-dev/dockside/internal/testutil/tarball"
	"github.com/dockside-dev/dockside/internal/topology"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// A capture is one trace: the Checkpoint's root, recorded once it is Ready, over capture (with freeze inside
// it), store and push, and Docker's calls as children of the span that made them (docs/tracing.md). No span
// carries the primary's image, command or env, nor the workspace's content.
func TestACaptureIsOneTrace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	collect := spans.Collect(t)
	const image, command, env, content = "registry.example/app:forbidden-image", "forbidden-command", "forbidden-env", "forbidden-content"

	docker := fake.New("n1")
	docker.AddImage(image, dd.ImageInfo{})
	docker.AddImage("holder", dd.ImageInfo{})
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "s", UID: "uid-s"}}
	sbx.Spec.Workspace.Size = resource.MustParse("1Mi")
	names := topology.NamesOf(sbx)
	_, err := docker.EnsureVolume(ctx, dd.VolumeSpec{Name: names.Workspace(), Owner: names.WorkspaceOwner(), Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	for _, spec := range []dd.ContainerSpec{
		{Name: names.Holder(), Owner: names.WorkspaceOwner(), Role: dsv1alpha1.RoleHolder, Image: "holder",
			Mounts: []dd.VolumeMount{{Volume: names.Workspace(), Target: topology.HolderMountPath}}},
		{Name: names.Primary(), Owner: names.WorkspaceOwner(), Role: dsv1alpha1.RolePrimary, Image: image,
			Cmd: []string{"sh", "-c", command}, Env: []dd.EnvVar{{Name: "TOKEN", Value: env}}},
	} {
		spec.Resources = dd.Resources{MemoryBytes: 8 << 20, NanoCPUs: 1e9, PIDs: 16}
		_, err = docker.EnsureContainer(ctx, spec)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(docker.StartContainer(ctx, spec.Name)).To(Succeed())
	}
	g.Expect(docker.CopyTo(ctx, names.Holder(), topology.HolderMountPath, tarball.Of(t, map[string]string{"notes.txt": content}))).To(Succeed())

	store, err := archive.Open(t.TempDir(), archive.Limits{Store: 1 << 30})
	g.Expect(err).NotTo(HaveOccurred())
	srv, err := memregistry.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = srv.Close() })
	reg, err := checkpointregistry.New(srv.Repo(), checkpointregistry.Options{PlainHTTP: true})
	g.Expect(err).NotTo(HaveOccurred())
	r := &Reconciler{
		Driver: metered.Wrap(docker, 0), Store: store, Registry: reg, Freezes: &handoff.Freezes{},
		Wake: func(types.NamespacedName) {}, Recorder: events.NewFakeRecorder(10), Options: Options{Node: "n1", CaptureTimeout: time.Minute},
	}
	ckpt := &dsv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "c", UID: "uid-c", CreationTimestamp: metav1.Now()}}

	_, err = r.capture(ctx, ckpt, sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ckpt.Status.Phase).To(Equal(dsv1alpha1.CheckpointReady))

	exported := collect()
	tree := spans.TreeOf(exported)
	root := tracing.Root(traceCheckpoint, string(ckpt.UID), 0)
	roots := spans.Named(exported, "checkpoint")
	g.Expect(roots).To(HaveLen(1), "the root is recorded once, when the capture is over")
	g.Expect(roots[0].SpanContext.SpanID()).To(Equal(root.SpanID()))
	g.Expect(roots[0].Attributes).To(ContainElements(tracing.Namespace("team-a"), tracing.Checkpoint("c"), tracing.Sandbox("s"),
		tracing.Phase(string(dsv1alpha1.CheckpointReady)), tracing.Reason(dsv1alpha1.ReasonSucceeded)))
	for _, name := range []string{"checkpoint.capture", "checkpoint.store", "checkpoint.push"} {
		g.Expect(tree.Parents(exported, name)).To(ConsistOf("checkpoint"), name)
	}
	g.Expect(tree.Parents(exported, "checkpoint.freeze")).To(ConsistOf("checkpoint.capture"))
	g.Expect(tree.Parents(exported, "docker.ObserveContainer")).To(ConsistOf("checkpoint.capture"))
	for _, op := range []string{"docker.PauseContainer", "docker.CopyFrom", "docker.UnpauseContainer"} {
		g.Expect(tree.Parents(exported, op)).To(ConsistOf("checkpoint.freeze"), op)
	}
	for _, s := range exported {
		g.Expect(s.SpanContext.TraceID()).To(Equal(root.TraceID()), "%s is in the Checkpoint's trace", s.Name)
		for _, v := range []string{image, command, env, content} {
			g.Expect(strings.Contains(spans.Text(s), v)).To(BeFalse(), "%s carries %q: %s", s.Name, v, spans.Text(s))
		}
	}
	var bytes []int64
	for _, kv := range spans.Named(exported, "checkpoint.store")[0].Attributes {
		if kv.Key == "dockside.bytes" {
			bytes = append(bytes, kv.Value.AsInt64())
		}
	}
	g.Expect(bytes).To(Equal([]int64{ckpt.Status.SizeBytes}))
}
