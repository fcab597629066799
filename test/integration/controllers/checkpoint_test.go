//go:build integration

package controllers_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
	"github.com/dockside-dev/dockside/internal/testutil/tarball"
)

// storingAgent is an agent with a checkpoint store of its own; store is the node's folder in it.
type storingAgent struct {
	*testAgent
	store string
}

// newStoringAgent starts an agent on a fresh node whose archives go to a folder of the spec's own.
func newStoringAgent(tweak ...func(*agent.Options)) *storingAgent {
	node := newNode()
	return startStoringAgent(node, newDocker(node), tweak...)
}

func startStoringAgent(node string, docker *fake.Driver, tweak ...func(*agent.Options)) *storingAgent {
	dir := GinkgoT().TempDir()
	withStore := func(o *agent.Options) { o.CheckpointDir, o.ArchiveRecheck = dir, 100*time.Millisecond }
	a := startAgent(node, docker, append([]func(*agent.Options){withStore}, tweak...)...)
	return &storingAgent{testAgent: a, store: filepath.Join(dir, node)}
}

// archives lists the archives in the agent's store.
func (a *storingAgent) archives() []string {
	GinkgoHelper()
	list, err := os.ReadDir(filepath.Join(a.store, "sha256"))
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, e := range list {
		out = append(out, e.Name())
	}
	return out
}

// archivePath is where the agent stores the archive with digest.
func (a *storingAgent) archivePath(digest string) string {
	return filepath.Join(a.store, "sha256", strings.TrimPrefix(digest, "sha256:"))
}

func checkpoint(ns, name, sandboxName string, paths ...string) *dsv1alpha1.Checkpoint {
	return &dsv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.CheckpointSpec{SandboxName: sandboxName, Paths: paths},
	}
}

func getCheckpoint(ckpt *dsv1alpha1.Checkpoint) *dsv1alpha1.Checkpoint {
	GinkgoHelper()
	out := &dsv1alpha1.Checkpoint{}
	Expect(k8s.Get(ctx(), client.ObjectKeyFromObject(ckpt), out)).To(Succeed())
	return out
}

// ckptState polls a Checkpoint as "Phase/Ready reason".
func ckptState(ckpt *dsv1alpha1.Checkpoint) func() string {
	return func() string {
		cur := &dsv1alpha1.Checkpoint{}
		if err := k8s.Get(ctx(), client.ObjectKeyFromObject(ckpt), cur); err != nil {
			return err.Error()
		}
		reason := "none"
		if c := meta.FindStatusCondition(cur.Status.Conditions, dsv1alpha1.ConditionReady); c != nil {
			reason = c.Reason
		}
		return string(cur.Status.Phase) + "/" + reason
	}
}

// ckptMessage is the message of the Checkpoint's Ready condition now.
func ckptMessage(ckpt *dsv1alpha1.Checkpoint) string {
	GinkgoHelper()
	c := meta.FindStatusCondition(getCheckpoint(ckpt).Status.Conditions, dsv1alpha1.ConditionReady)
	Expect(c).NotTo(BeNil())
	return c.Message
}

// objectGone polls whether obj has been deleted for good.
func objectGone(obj client.Object) func() bool {
	return func() bool {
		err := k8s.Get(ctx(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return client.IgnoreNotFound(err) == nil && err != nil
	}
}

// objectEvents polls the reasons of the Events recorded about the object of a kind.
func objectEvents(obj client.Object, kind string) func() []string {
	return func() []string {
		var list eventsv1.EventList
		if err := k8s.List(ctx(), &list, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		var out []string
		for _, ev := range list.Items {
			if ev.Regarding.Name == obj.GetName() && ev.Regarding.Kind == kind {
				out = append(out, ev.Reason)
			}
		}
		return out
	}
}

// fillWorkspace writes files (a name ending in "/" is a folder) into the Sandbox's workspace through its holder.
func fillWorkspace(d *fake.Driver, sbx *dsv1alpha1.Sandbox, files map[string]string) {
	GinkgoHelper()
	Expect(d.CopyTo(ctx(), holderOf(d, sbx), "/workspace", tarball.Of(GinkgoT(), files))).To(Succeed())
}

// holderOf is the name of the Sandbox's workspace holder once it runs: a new session's comes on the pass
// after the one that made it Ready.
func holderOf(d *fake.Driver, sbx *dsv1alpha1.Sandbox) string {
	GinkgoHelper()
	Eventually(state(d, sbx, dsv1alpha1.RoleHolder, "")).Should(Equal(dd.StateRunning))
	return container(d, sbx, dsv1alpha1.RoleHolder, "").Name
}

// workspaceFiles reads every file (and folder, with a trailing "/") of the Sandbox's workspace.
func workspaceFiles(d *fake.Driver, sbx *dsv1alpha1.Sandbox) map[string]string {
	GinkgoHelper()
	rc, err := d.CopyFrom(ctx(), holderOf(d, sbx), "/workspace/.")
	Expect(err).NotTo(HaveOccurred())
	defer rc.Close()
	return tarFiles(rc)
}

// tarFiles reads a tar stream into name → content, folders with a trailing "/" and names cleaned of "./".
func tarFiles(r io.Reader) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	for name, content := range tarball.Files(GinkgoT(), r) {
		if name = strings.TrimPrefix(name, "./"); name != "" {
			out[name] = content
		}
	}
	return out
}

// runningSession creates a session on the agent's node and waits until it is Ready.
func runningSession(ns, name string, a *storingAgent) *dsv1alpha1.Sandbox {
	GinkgoHelper()
	sbx := sandbox(ns, name, a.node)
	create(sbx)
	Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	return sbx
}

var _ = Describe("A Checkpoint", func() {
	It("captures a running session's workspace, freezing it only for the copy, and stores it by digest", func() {
		ns, a := newNamespace(), newStoringAgent()
		sbx := runningSession(ns, "box", a)
		fillWorkspace(a.docker, sbx, map[string]string{"notes.txt": "hello", "src/": "", "src/main.go": "package main"})
		pauses, thaws := a.docker.Calls(fake.OpPauseContainer), a.docker.Calls(fake.OpUnpauseContainer)

		ckpt := checkpoint(ns, "snap", "box")
		create(ckpt)
		Eventually(ckptState(ckpt)).Should(Equal("Ready/Succeeded"))

		cur := getCheckpoint(ckpt)
		Expect(cur.Status.NodeName).To(Equal(a.node))
		Expect(cur.Status.Digest).To(MatchRegexp(`^sha256:[a-f0-9]{64}$`))
		Expect(cur.Status.CapturedAt).NotTo(BeNil())
		Expect(cur.Status.CaptureDuration).NotTo(BeNil())
		Expect(cur.Status.FrozenDuration).NotTo(BeNil())
		Expect(cur.Status.FrozenDuration.Duration).To(BeNumerically("<=", cur.Status.CaptureDuration.Duration))
		Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		Expect(cur.Finalizers).To(ContainElement(dsv1alpha1.FinalizerCleanup))
		for typ, want := range map[string]string{dsv1alpha1.ConditionReconciling: "False", dsv1alpha1.ConditionStalled: "False"} {
			Expect(string(meta.FindStatusCondition(cur.Status.Conditions, typ).Status)).To(Equal(want), typ)
		}

		By("storing the archive under its sha256, with the workspace's files")
		data, err := os.ReadFile(a.archivePath(cur.Status.Digest))
		Expect(err).NotTo(HaveOccurred())
		sum := sha256.Sum256(data)
		Expect("sha256:" + hex.EncodeToString(sum[:])).To(Equal(cur.Status.Digest))
		Expect(cur.Status.SizeBytes).To(BeEquivalentTo(len(data)))
		Expect(cur.Status.Size).To(HaveSuffix("Ki"), "a few KiB of tar, for people (kubectl get's Size column)")
		size := resource.MustParse(cur.Status.Size)
		Expect(size.AsApproximateFloat64()).To(BeNumerically("~", len(data), len(data)/19))
		Expect(tarFiles(bytes.NewReader(data))).To(Equal(map[string]string{"notes.txt": "hello", "src/": "", "src/main.go": "package main"}))

		By("having frozen the primary once and thawed it")
		Expect(a.docker.Calls(fake.OpPauseContainer)).To(Equal(pauses + 1))
		Expect(a.docker.Calls(fake.OpUnpauseContainer)).To(Equal(thaws + 1))
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning))
		Consistently(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Eventually(objectEvents(ckpt, "Checkpoint")).Should(ContainElement("Captured"))
	})

	It("leaves a paused Sandbox paused", func() {
		ns, a := newNamespace(), newStoringAgent()
		sbx := sandbox(ns, "frozen", a.node)
		sbx.Spec.Lifecycle = dsv1alpha1.LifecyclePaused
		create(sbx)
		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxPaused))
		fillWorkspace(a.docker, sbx, map[string]string{"kept.txt": "still here"})
		thaws := a.docker.Calls(fake.OpUnpauseContainer)

		ckpt := checkpoint(ns, "snap", "frozen")
		create(ckpt)
		Eventually(ckptState(ckpt)).Should(Equal("Ready/Succeeded"))
		Expect(getCheckpoint(ckpt).Status.FrozenDuration.Duration).To(BeZero(), "it was frozen already")
		Expect(a.docker.Calls(fake.OpUnpauseContainer)).To(Equal(thaws))
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StatePaused))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxPaused))
	})

	It("captures only the listed paths, each in its own place in the workspace", func() {
		ns, a := newNamespace(), newStoringAgent()
		sbx := runningSession(ns, "box", a)
		fillWorkspace(a.docker, sbx, map[string]string{
			"keep/a.txt": "a", "keep/deep/b.txt": "b", "other/c.txt": "c", "top.txt": "t",
		})
		ckpt := checkpoint(ns, "some", "box", "keep/deep", "top.txt")
		create(ckpt)
		Eventually(ckptState(ckpt)).Should(Equal("Ready/Succeeded"))
		f, err := os.Open(a.archivePath(getCheckpoint(ckpt).Status.Digest))
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		Expect(tarFiles(f)).To(Equal(map[string]string{"keep/deep/": "", "keep/deep/b.txt": "b", "top.txt": "t"}))

		By("failing, naming it, when a listed path is not there")
		missing := checkpoint(ns, "missing", "box", "nope")
		create(missing)
		Eventually(ckptState(missing)).Should(Equal("Failed/CaptureFailed"))
		Expect(ckptMessage(missing)).To(ContainSubstring(`path "nope" is not in the workspace`))
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning), "thawed after the failure")
	})

	It("waits for a Sandbox that does not exist or run yet, and captures it once it runs", func() {
		ns, a := newNamespace(), newStoringAgent()
		ckpt := checkpoint(ns, "early", "later")
		create(ckpt)
		Eventually(ckptState(ckpt)).Should(Equal("Pending/SandboxNotFound"))
		Expect(getCheckpoint(ckpt).Status.NodeName).To(BeEmpty())

		create(sandbox(ns, "later", a.node))
		Eventually(ckptState(ckpt)).Should(Equal("Ready/Succeeded"))
		Expect(getCheckpoint(ckpt).Status.NodeName).To(Equal(a.node))
	})

	It("fails for good, saying why, for a finished run and for a poisoned topology", func() {
		ns, a := newNamespace(), newStoringAgent()
		run := sandbox(ns, "run", a.node)
		run.Spec.Command = []string{"true"}
		create(run)
		Eventually(phase(run)).Should(Equal(dsv1alpha1.SandboxRunning))
		Expect(a.docker.Exit(container(a.docker, run, dsv1alpha1.RolePrimary, "").Name, 0)).To(Succeed())
		Eventually(phase(run)).Should(Equal(dsv1alpha1.SandboxSucceeded))
		ended := checkpoint(ns, "of-run", "run")
		create(ended)
		Eventually(ckptState(ended)).Should(Equal("Failed/SandboxNotRunning"))
		Expect(ckptMessage(ended)).To(ContainSubstring("has ended (Succeeded)"))
		Expect(meta.IsStatusConditionTrue(getCheckpoint(ended).Status.Conditions, dsv1alpha1.ConditionStalled)).To(BeTrue())
		Eventually(objectEvents(ended, "Checkpoint")).Should(ContainElement("CaptureFailed"))

		create(service(ns, "db"))
		session := sandbox(ns, "poisoned", a.node)
		session.Spec.Services = []string{"db"}
		create(session)
		Eventually(condition(session, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(a.docker.Exit(container(a.docker, session, dsv1alpha1.RoleService, "db").Name, 1)).To(Succeed())
		Eventually(condition(session, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/ServiceExited"))
		bad := checkpoint(ns, "of-poisoned", "poisoned")
		create(bad)
		Eventually(ckptState(bad)).Should(Equal("Failed/SandboxPoisoned"))
		Expect(a.archives()).To(BeEmpty())
	})

	It("is captured by the agent of its Sandbox's node only", func() {
		ns := newNamespace()
		here, there := newStoringAgent(), newStoringAgent()
		runningSession(ns, "box", there)
		ckpt := checkpoint(ns, "snap", "box")
		create(ckpt)
		Eventually(ckptState(ckpt)).Should(Equal("Ready/Succeeded"))
		Expect(getCheckpoint(ckpt).Status.NodeName).To(Equal(there.node))
		Expect(there.archives()).To(HaveLen(1))
		Expect(here.archives()).To(BeEmpty())
	})

	It("fails, thawing the Sandbox, when the copy out fails; retries while Docker cannot be reached", func() {
		ns, a := newNamespace(), newStoringAgent()
		sbx := runningSession(ns, "box", a)
		a.docker.FailNext(fake.OpCopyFrom, dd.KindUncertain)
		broken := checkpoint(ns, "broken", "box")
		create(broken)
		Eventually(ckptState(broken)).Should(Equal("Failed/CaptureFailed"))
		Expect(ckptMessage(broken)).To(ContainSubstring("copying the workspace out"))
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning))
		Expect(a.archives()).To(BeEmpty())
		tmp, err := os.ReadDir(filepath.Join(a.store, "tmp"))
		Expect(err).NotTo(HaveOccurred())
		Expect(tmp).To(BeEmpty(), "the unfinished capture is dropped")

		observed := a.docker.Calls(fake.OpObserveContainer)
		a.docker.FailNext(fake.OpObserveContainer, dd.KindUnavailable)
		a.docker.FailNext(fake.OpObserveContainer, dd.KindUnavailable)
		retried := checkpoint(ns, "retried", "box")
		create(retried)
		Eventually(ckptState(retried)).Should(Equal("Ready/Succeeded"))
		Expect(a.docker.Calls(fake.OpObserveContainer)).To(Equal(observed+4),
			"two attempts met no daemon, the third saw the workspace holder and the primary running, and captured")
	})
})

var _ = Describe("Deleting a Checkpoint", func() {
	It("removes its archive, unless another Checkpoint holds the same one", func() {
		ns, a := newNamespace(), newStoringAgent()
		sbx := runningSession(ns, "box", a)
		fillWorkspace(a.docker, sbx, map[string]string{"same.txt": "unchanged between the two"})
		first, second := checkpoint(ns, "first", "box"), checkpoint(ns, "second", "box")
		create(first)
		Eventually(ckptState(first)).Should(Equal("Ready/Succeeded"))
		create(second)
		Eventually(ckptState(second)).Should(Equal("Ready/Succeeded"))
		Expect(getCheckpoint(second).Status.Digest).To(Equal(getCheckpoint(first).Status.Digest))
		Expect(a.archives()).To(HaveLen(1), "stored once")

		Expect(k8s.Delete(ctx(), first)).To(Succeed())
		Eventually(objectGone(first)).Should(BeTrue())
		Expect(a.archives()).To(HaveLen(1), "the second still holds it")
		Expect(k8s.Delete(ctx(), second)).To(Succeed())
		Eventually(objectGone(second)).Should(BeTrue())
		Expect(a.archives()).To(BeEmpty())
		Eventually(objectEvents(second, "Checkpoint")).Should(ContainElement("ArchiveReleased"))
	})
})

var _ = Describe("A stored archive", func() {
	It("that vanished from the node's disk turns its Checkpoint Failed, never silently empty", func() {
		ns, a := newNamespace(), newStoringAgent()
		runningSession(ns, "box", a)
		ckpt := checkpoint(ns, "snap", "box")
		create(ckpt)
		Eventually(ckptState(ckpt)).Should(Equal("Ready/Succeeded"))
		Expect(os.Remove(a.archivePath(getCheckpoint(ckpt).Status.Digest))).To(Succeed())
		Eventually(ckptState(ckpt)).Should(Equal("Failed/ArchiveMissing"))
		Expect(ckptMessage(ckpt)).To(ContainSubstring("missing from node " + a.node))
	})
})
