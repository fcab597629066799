package fake_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/testutil/tarball"
)

const image = "dockside.dev/busybox:local"

var owner = dd.Owner{Namespace: "ns", Name: "sbx", UID: "uid-1", Generation: 1}

func newFake() *fake.Driver {
	f := fake.New("node-a")
	f.AddImage(image, dd.ImageInfo{})
	return f
}

func spec(role, service string) dd.ContainerSpec {
	return dd.ContainerSpec{
		Name: dd.Name(owner, role, service), Owner: owner, Role: role, Service: service, Image: image,
		Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64},
	}
}

// started ensures and starts s.
func started(g Gomega, f *fake.Driver, s dd.ContainerSpec) {
	_, err := f.EnsureContainer(context.Background(), s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.StartContainer(context.Background(), s.Name)).To(Succeed())
}

// events subscribes and returns a function that takes the next event within a second.
func events(t *testing.T, f *fake.Driver) func() dd.Event {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := f.Events(ctx)
	return func() dd.Event {
		select {
		case ev := <-ch:
			return ev
		case <-time.After(time.Second):
			return dd.Event{Type: "timeout"}
		}
	}
}

func TestContainerLifecycleAndEvents(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFake()
	next := events(t, f)
	s := spec(dsv1alpha1.RoleService, "db")

	created, err := f.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created.State).To(Equal(dd.StateCreated))
	again, err := f.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ID).To(Equal(created.ID), "an ensure of an existing container adopts it")

	g.Expect(f.StartContainer(ctx, s.Name)).To(Succeed())
	start := next()
	g.Expect(start.Type).To(Equal(dd.EventStart))
	g.Expect(start.Owner).To(Equal(owner))
	g.Expect(start.Service).To(Equal("db"))
	g.Expect(f.PauseContainer(ctx, s.Name)).To(Succeed())
	g.Expect(next().Type).To(Equal(dd.EventPause))
	g.Expect(f.PauseContainer(ctx, s.Name)).To(Succeed(), "pausing a paused container is fine")
	g.Expect(f.UnpauseContainer(ctx, s.Name)).To(Succeed())
	g.Expect(next().Type).To(Equal(dd.EventUnpause))

	g.Expect(f.Exit(s.Name, 3)).To(Succeed())
	die := next()
	g.Expect(die.Type).To(Equal(dd.EventDie))
	g.Expect(die.ExitCode).To(Equal(3))
	info, err := f.ObserveContainer(ctx, s.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.State).To(Equal(dd.StateExited))
	g.Expect(info.ExitCode).To(Equal(3))
	g.Expect(info.FinishedAt.IsZero()).To(BeFalse())
	g.Expect(f.StopContainer(ctx, s.Name, time.Second)).To(Succeed(), "stopping a stopped container is fine")

	g.Expect(f.RemoveContainer(ctx, s.Name)).To(Succeed())
	g.Expect(next().Type).To(Equal(dd.EventDestroy))
	g.Expect(f.RemoveContainer(ctx, s.Name)).To(Succeed(), "removing a missing container is fine")
	gone, err := f.ObserveContainer(ctx, s.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gone.Exists).To(BeFalse())
	g.Expect(dd.IsNotFound(f.StartContainer(ctx, s.Name))).To(BeTrue())
}

func TestConflictsAndDependencies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFake()
	s := spec(dsv1alpha1.RolePrimary, "")

	other := s
	other.Owner.UID = "someone-else"
	_, err := f.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.EnsureContainer(ctx, other)
	g.Expect(dd.IsConflict(err)).To(BeTrue(), "a name held by another owner is never adopted")

	f.AddForeignContainer("squatter")
	_, err = f.ObserveContainer(ctx, "squatter")
	g.Expect(dd.IsConflict(err)).To(BeTrue())
	g.Expect(dd.IsConflict(f.RemoveContainer(ctx, "squatter"))).To(BeTrue())

	noImage := spec(dsv1alpha1.RoleService, "x")
	noImage.Image = "missing:latest"
	_, err = f.EnsureContainer(ctx, noImage)
	g.Expect(dd.IsNotFound(err)).To(BeTrue())
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseImage))

	f.AddImage("with-volume", dd.ImageInfo{Volumes: []string{"/data"}})
	withVolume := spec(dsv1alpha1.RoleService, "y")
	withVolume.Image = "with-volume"
	_, err = f.EnsureContainer(ctx, withVolume)
	g.Expect(dd.IsInvalidSpec(err)).To(BeTrue(), "an uncovered image VOLUME is refused")
	withVolume.Tmpfs = []dd.TmpfsMount{{Target: "/data", SizeBytes: 1 << 20}}
	_, err = f.EnsureContainer(ctx, withVolume)
	g.Expect(err).NotTo(HaveOccurred())

	onNetwork := spec(dsv1alpha1.RoleService, "z")
	onNetwork.Network.Name = "missing-net"
	_, err = f.EnsureContainer(ctx, onNetwork)
	g.Expect(dd.IsNotFound(err)).To(BeTrue())
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseNetwork))
	f.AddForeignNetwork("host")
	onNetwork.Network.Name = "host"
	_, err = f.EnsureContainer(ctx, onNetwork)
	g.Expect(dd.IsInvalidSpec(err)).To(BeTrue())

	noLimits := spec(dsv1alpha1.RoleService, "w")
	noLimits.Resources.PIDs = 0
	_, err = f.EnsureContainer(ctx, noLimits)
	g.Expect(dd.IsInvalidSpec(err)).To(BeTrue())
}

func TestFaultInjection(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFake()
	s := spec(dsv1alpha1.RolePrimary, "")

	f.LoseNextResponse(fake.OpEnsureContainer)
	_, err := f.EnsureContainer(ctx, s)
	g.Expect(dd.IsUncertain(err)).To(BeTrue())
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseCreate))
	info, err := f.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Exists).To(BeTrue(), "the lost create did happen and is adopted")

	f.FailNext(fake.OpStartContainer, dd.KindConflict)
	g.Expect(dd.IsConflict(f.StartContainer(ctx, s.Name))).To(BeTrue())
	info, _ = f.ObserveContainer(ctx, s.Name)
	g.Expect(info.State).To(Equal(dd.StateCreated), "a failed call has no effect")
	g.Expect(f.StartContainer(ctx, s.Name)).To(Succeed(), "only the next call fails")
	g.Expect(f.Calls(fake.OpStartContainer)).To(Equal(2))

	f.HangNext(fake.OpObserveContainer)
	began := time.Now() // before the deadline is set, which counts from then: a loaded machine may pause between
	hctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = f.ObserveContainer(hctx, s.Name)
	g.Expect(dd.IsUncertain(err)).To(BeTrue())
	g.Expect(time.Since(began)).To(BeNumerically(">=", 50*time.Millisecond))

	f.SetUnavailable(true)
	_, err = f.Ping(ctx)
	g.Expect(dd.IsUnavailable(err)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("Docker is not reachable"))
	f.SetUnavailable(false)
	_, err = f.Ping(ctx)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestOOMAndDroppedEventStream(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFake()
	next := events(t, f)
	a, b := spec(dsv1alpha1.RoleService, "a"), spec(dsv1alpha1.RoleService, "b")
	started(g, f, a)
	started(g, f, b)
	g.Expect(next().Type).To(Equal(dd.EventStart))
	g.Expect(next().Type).To(Equal(dd.EventStart))

	g.Expect(f.OOM(a.Name)).To(Succeed())
	g.Expect(next().Type).To(Equal(dd.EventOOM))
	die := next()
	g.Expect(die.Type).To(Equal(dd.EventDie))
	g.Expect(die.ExitCode).To(Equal(137))
	info, _ := f.ObserveContainer(ctx, a.Name)
	g.Expect(info.OOMKilled).To(BeTrue())

	f.DropEvents()
	g.Expect(f.Exit(b.Name, 1)).To(Succeed())
	g.Expect(next().Type).To(Equal(dd.EventType("timeout")), "events are lost while the stream is down")
	f.ResumeEvents()
	g.Expect(next().Type).To(Equal(dd.EventResync))
}

func TestExecDeadlineAndCap(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFake()
	s := spec(dsv1alpha1.RolePrimary, "")
	started(g, f, s)
	f.SetExecHandler(func(ctx context.Context, _ string, req dd.ExecRequest) fake.ExecOutput {
		if req.Command[0] == "sleep" {
			<-ctx.Done()
			return fake.ExecOutput{}
		}
		return fake.ExecOutput{Stdout: bytes.Repeat([]byte("x"), 128<<10), Stderr: []byte("e"), ExitCode: 2}
	})

	res, err := f.Exec(ctx, s.Name, dd.ExecRequest{Command: []string{"print"}, Timeout: time.Second, OutputLimit: 64 << 10})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Reason).To(Equal(dd.ExecCompleted))
	g.Expect(res.ExitCode).To(Equal(2))
	g.Expect(res.Stdout).To(HaveLen(64 << 10))
	g.Expect(res.StdoutCut).To(Equal(int64(64 << 10)))
	g.Expect(string(res.Stderr)).To(Equal("e"))

	_, err = f.Exec(ctx, s.Name, dd.ExecRequest{Command: []string{"print"}})
	g.Expect(dd.IsInvalidSpec(err)).To(BeTrue())

	began := time.Now()
	res, err = f.Exec(ctx, s.Name, dd.ExecRequest{Command: []string{"sleep"}, Timeout: 100 * time.Millisecond, OutputLimit: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Reason).To(Equal(dd.ExecDeadlineExceeded))
	g.Expect(res.ContainerKilled).To(BeTrue())
	g.Expect(time.Since(began)).To(BeNumerically("<", time.Second))
	info, _ := f.ObserveContainer(ctx, s.Name)
	g.Expect(info.State).To(Equal(dd.StateExited), "a deadline kills the container")

	_, err = f.Exec(ctx, s.Name, dd.ExecRequest{Command: []string{"print"}, Timeout: time.Second, OutputLimit: 1})
	g.Expect(dd.IsConflict(err)).To(BeTrue(), "no exec in a stopped container")

	g.Expect(f.StartContainer(ctx, s.Name)).To(Succeed())
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	res, err = f.Exec(cctx, s.Name, dd.ExecRequest{Command: []string{"sleep"}, Timeout: time.Minute, OutputLimit: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Reason).To(Equal(dd.ExecCanceled))
}

func TestTmpfsWorkspaceNeedsARunningHolder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFake()
	ws, err := f.EnsureVolume(ctx, dd.VolumeSpec{Name: "ws", Owner: owner, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	holder, primary := spec(dsv1alpha1.RoleHolder, ""), spec(dsv1alpha1.RolePrimary, "")
	holder.Mounts = []dd.VolumeMount{{Volume: ws.Name, Target: "/workspace"}}
	primary.Mounts = holder.Mounts

	// Without a running holder, a copy into a created container is lost, as on real Docker.
	_, err = f.EnsureContainer(ctx, primary)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.CopyTo(ctx, primary.Name, "/workspace", tarball.Of(t, map[string]string{"a.txt": "lost"}))).To(Succeed())
	_, err = f.CopyFrom(ctx, primary.Name, "/workspace/a.txt")
	g.Expect(dd.IsNotFound(err)).To(BeTrue())

	// With the holder running it stays, and is seen through every container that mounts the volume.
	started(g, f, holder)
	g.Expect(f.CopyTo(ctx, primary.Name, "/workspace", tarball.Of(t, map[string]string{"a.txt": "kept"}))).To(Succeed())
	g.Expect(f.StartContainer(ctx, primary.Name)).To(Succeed())
	rc, err := f.CopyFrom(ctx, holder.Name, "/workspace/.")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tarball.Files(t, rc)).To(Equal(map[string]string{"./": "", "./a.txt": "kept"}))
	rc, err = f.CopyFrom(ctx, primary.Name, "/workspace")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tarball.Files(t, rc)).To(HaveKeyWithValue("workspace/a.txt", "kept"))

	g.Expect(dd.IsConflict(f.RemoveVolume(ctx, ws.Name))).To(BeTrue(), "a volume in use cannot be removed")
	g.Expect(f.RemoveContainer(ctx, holder.Name)).To(Succeed())
	g.Expect(f.RemoveContainer(ctx, primary.Name)).To(Succeed())
	g.Expect(f.RemoveVolume(ctx, ws.Name)).To(Succeed())
}

func TestNetworksAndListing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFake()
	ns := dd.NetworkSpec{Name: dd.Name(owner, dsv1alpha1.RoleNetwork, ""), Owner: owner, Internal: true, Subnet: "10.9.0.0/28"}
	n, err := f.EnsureNetwork(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Labels).To(HaveKeyWithValue(dsv1alpha1.LabelSubnet, "10.9.0.0/28"))
	other := ns
	other.Owner.UID = "else"
	_, err = f.EnsureNetwork(ctx, other)
	g.Expect(dd.IsConflict(err)).To(BeTrue())

	s := spec(dsv1alpha1.RoleService, "db")
	s.Network = dd.NetworkAttachment{Name: n.Name, Aliases: []string{"db"}}
	started(g, f, s)
	info, _ := f.ObserveContainer(ctx, s.Name)
	g.Expect(info.IP).NotTo(BeEmpty())
	g.Expect(dd.IsConflict(f.RemoveNetwork(ctx, n.Name))).To(BeTrue(), "a network with a running container stays")

	list, err := f.ListContainers(ctx, map[string]string{dsv1alpha1.LabelRole: dsv1alpha1.RoleService})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(HaveLen(1))
	nets, err := f.ListNetworks(ctx, map[string]string{dsv1alpha1.LabelUID: owner.UID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nets).To(HaveLen(1))

	g.Expect(f.WriteLogs(s.Name, []byte("hello world"))).To(Succeed())
	tail, err := f.LogTail(ctx, s.Name, 5)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(tail.Data)).To(Equal("world"))
	g.Expect(tail.Cut).To(Equal(int64(6)))

	g.Expect(f.RemoveContainer(ctx, s.Name)).To(Succeed())
	g.Expect(f.RemoveNetwork(ctx, n.Name)).To(Succeed())
	g.Expect(f.RemoveNetwork(ctx, n.Name)).To(Succeed(), "removing a missing network is fine")
}
