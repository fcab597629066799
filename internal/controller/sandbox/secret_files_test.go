package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/testutil/recorder"
	"github.com/dockside-dev/dockside/internal/topology"
)

// The value the tests' Secret holds; no container's config or environment, status or Event may show it.
const secretValue = "s3cr3t-value-0451"

func tokenSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "creds"}, Data: data}
}

// withSecretFiles gives the Sandbox the files token and aws/credentials from Secret creds.
func withSecretFiles(sbx *dsv1alpha1.Sandbox) {
	sbx.Spec.SecretFiles = []dsv1alpha1.SecretFile{
		{SecretName: "creds", Key: "token", Path: "token"},
		{SecretName: "creds", Key: "aws", Path: "aws/credentials"},
	}
}

var credsSecret = tokenSecret(map[string][]byte{"token": []byte(secretValue), "aws": []byte("[default]\n")})

func TestSecretArchive(t *testing.T) {
	g := NewWithT(t)
	files := []dsv1alpha1.SecretFile{{Path: "a/b/c"}, {Path: "a/d"}, {Path: "top"}}
	tr := tar.NewReader(bytes.NewReader(secretArchive(files, [][]byte{[]byte("1"), []byte("22"), nil}, 1000, 2000)))
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		data     string
	}
	var got []entry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		data, err := io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
		got = append(got, entry{hdr.Name, hdr.Mode, hdr.Uid, hdr.Gid, string(data)})
	}
	g.Expect(got).To(Equal([]entry{
		{"a/", 0o755, 0, 0, ""}, {"a/b/", 0o755, 0, 0, ""}, // parents first, root's, searchable by all
		{"a/b/c", 0o400, 1000, 2000, "1"}, {"a/d", 0o400, 1000, 2000, "22"}, {"top", 0o400, 1000, 2000, ""},
	}))
}

func TestInMemoryCountsWholePages(t *testing.T) {
	g := NewWithT(t)
	g.Expect(inMemory([][]byte{nil, make([]byte, 1), make([]byte, 4096), make([]byte, 4097)})).To(Equal(int64(4 * 4096)))
}

func TestEnsureSecretFiles(t *testing.T) {
	noContainers := func(g Gomega, h *harness, s *scope) {
		g.Expect(h.owned(s.sbx.UID)).To(BeZero(), "nothing of the start is made")
		g.Expect(s.recheck).To(Equal(specRetry), "the Secret is looked for again")
	}
	runStepCases(t, (*Reconciler).ensureSecretFiles, []stepCase{
		{
			name:    "the files are written through a holder of their own before the primary is made",
			sbx:     atTopology(newSandbox("s", withSecretFiles), 1),
			objects: []client.Object{credsSecret.DeepCopy()},
			events:  []string{"Normal " + EventSecretFilesWritten},
			check: func(g Gomega, h *harness, s *scope) {
				holder := h.container(s.secretsHolderName())
				g.Expect(holder.State).To(Equal(dd.StateRunning))
				g.Expect(holder.Labels).To(HaveKeyWithValue(dsv1alpha1.LabelRole, dsv1alpha1.RoleHolder))
				g.Expect(holder.Labels).To(HaveKeyWithValue(dsv1alpha1.LabelService, secretsHolderService))
				vol := h.volume(s.secretsVolumeName())
				g.Expect(vol.Labels).To(HaveKeyWithValue(dsv1alpha1.LabelRole, dsv1alpha1.RoleSecrets))
				g.Expect(vol.SizeBytes).To(Equal(int64(secretFilesBytes)))
				g.Expect(h.readFile(holder.Name, secretsHolderPath+"/token")).To(Equal(secretValue))
				g.Expect(h.readFile(holder.Name, secretsHolderPath+"/aws/credentials")).To(Equal("[default]\n"))
				g.Expect(h.container(s.holderName()).Exists).To(BeFalse(), "the workspace holder never mounts them")
			},
		},
		{
			name:    "a holder that runs already gets the files again, with no Event",
			sbx:     atTopology(newSandbox("s", withSecretFiles), 1),
			objects: []client.Object{credsSecret.DeepCopy()},
			docker: func(h *harness, s *scope) {
				h.continues(h.r.ensureSecretFiles(h.ctx, s))
				recorder.Drain(h.events)
			},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.view.calls()).To(BeEmpty(), "no container was started or stopped")
				g.Expect(h.readFile(s.secretsHolderName(), secretsHolderPath+"/token")).To(Equal(secretValue))
			},
		},
		{
			name:    "a missing Secret holds the Sandbox Pending, naming it, with nothing made",
			sbx:     atTopology(newSandbox("s", withSecretFiles), 1),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonSecretNotFound},
			message: `secret file "token" needs Secret "creds", which does not exist in namespace ns`,
			check:   noContainers,
		},
		{
			name:    "a missing key holds the Sandbox Pending, naming it, with nothing made",
			sbx:     atTopology(newSandbox("s", withSecretFiles), 1),
			objects: []client.Object{tokenSecret(map[string][]byte{"token": []byte(secretValue)})},
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonSecretNotFound},
			message: `secret file "aws/credentials" needs key "aws" of Secret "creds", which the Secret does not hold`,
			check:   noContainers,
		},
		{
			name:    "values larger than the mount holds are refused before anything is made",
			sbx:     atTopology(newSandbox("s", withSecretFiles), 1),
			objects: []client.Object{tokenSecret(map[string][]byte{"token": make([]byte, secretFilesBytes), "aws": []byte("x")})},
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonSecretFilesTooLarge},
			message: "take 1028 KiB in memory, more than the 1024 KiB their mount holds",
			check:   noContainers,
		},
		{
			name:    "a copy Docker does not confirm is retried",
			sbx:     atTopology(newSandbox("s", withSecretFiles), 1),
			objects: []client.Object{credsSecret.DeepCopy()},
			faults:  func(h *harness) { h.docker.FailNext(fake.OpCopyTo, dd.KindUnavailable) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "writing the secret files failed",
		},
		{
			name:    "once the primary has started nothing is read or written",
			sbx:     withStarted(atTopology(newSandbox("s", withSecretFiles), 1)),
			objects: []client.Object{}, // no Secret: reading one would hold the Sandbox
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.secretsHolderName()).Exists).To(BeFalse())
			},
		},
		{
			name: "a Sandbox without secretFiles makes nothing",
			sbx:  atTopology(newSandbox("s"), 1),
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.owned(s.sbx.UID)).To(BeZero())
			},
		},
	})
}

func TestPrimaryMountsSecretFilesReadOnly(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t)
	s := h.scope(atTopology(newSandbox("s", withSecretFiles), 1))
	g.Expect(h.r.primarySpec(s).Mounts).To(ContainElement(dd.VolumeMount{Volume: s.secretsVolumeName(), Target: "/run/secrets/dockside", ReadOnly: true}))
	plain := h.scope(atTopology(newSandbox("p"), 1))
	g.Expect(h.r.primarySpec(plain).Mounts).To(HaveLen(3), "the workspace, the run volume and the supervisor volume alone")
}

func TestSecretFilesRollTheTopology(t *testing.T) {
	g := NewWithT(t)
	plain := newSandbox("s")
	with := newSandbox("s", withSecretFiles)
	other := newSandbox("s", withSecretFiles, func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.SecretFiles[0].Key = "other" })
	hashes := map[string]bool{}
	for _, sbx := range []*dsv1alpha1.Sandbox{plain, with, other} {
		hashes[topology.Hash(&sbx.Spec, nil, nil)] = true
	}
	g.Expect(hashes).To(HaveLen(3))
}

func TestFootprintCountsTheSecretsVolume(t *testing.T) {
	g := NewWithT(t)
	g.Expect(footprint(newSandbox("s", withSecretFiles), nil).Memory - footprint(newSandbox("s"), nil).Memory).To(Equal(int64(secretFilesBytes)))
}

func TestReleaseSecretFiles(t *testing.T) {
	// holderOf makes the secrets holder of generation gen, as ensureSecretFiles leaves it.
	holderOf := func(gen int64) func(h *harness, s *scope) {
		return func(h *harness, s *scope) {
			at := s.sbx.DeepCopy()
			at.Status.TopologyGeneration = gen
			as := h.scope(at)
			h.continues(h.r.ensureSecretFiles(h.ctx, as))
		}
	}
	holderGone := func(g Gomega, h *harness, s *scope) {
		containers, _, _ := h.owned(s.sbx.UID)
		g.Expect(containers).To(BeZero(), "no container is left")
	}
	runStepCases(t, (*Reconciler).releaseSecretFiles, []stepCase{
		{
			name:    "kept while the start it was written for goes on",
			sbx:     atTopology(newSandbox("s", withSecretFiles), 1),
			objects: []client.Object{credsSecret.DeepCopy()},
			docker:  holderOf(1),
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.secretsHolderName()).State).To(Equal(dd.StateRunning))
			},
		},
		{
			name:    "removed once the primary has started; the running primary keeps the files",
			sbx:     withStarted(atTopology(newSandbox("s", withSecretFiles), 1)),
			objects: []client.Object{credsSecret.DeepCopy()},
			docker: func(h *harness, s *scope) {
				pending := s.sbx.DeepCopy()
				pending.Status.StartTime, pending.Status.ContainerID = nil, ""
				h.continues(h.r.ensureSecretFiles(h.ctx, h.scope(pending)))
				h.start(h.primarySpec(s))
			},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.secretsHolderName()).Exists).To(BeFalse())
				g.Expect(h.readFile(s.primaryName(), "/run/secrets/dockside/token")).To(Equal(secretValue))
			},
		},
		{
			name:    "removed when the topology settled before its primary started",
			sbx:     withCondition(atTopology(newSandbox("s", withSecretFiles), 1), dsv1alpha1.ConditionTopologyPoisoned, true, dsv1alpha1.ReasonStartTimeout, "slow"),
			objects: []client.Object{credsSecret.DeepCopy()},
			docker:  holderOf(1),
			check:   holderGone,
		},
		{
			name:    "one of an older generation is removed",
			sbx:     atTopology(newSandbox("s", withSecretFiles), 2),
			objects: []client.Object{credsSecret.DeepCopy()},
			docker:  holderOf(1),
			check:   holderGone,
		},
	})
}

// A whole life through Reconcile: the files are there in the running primary, the value is in no
// container's configuration, environment, status or Event, the secrets holder is gone once the primary
// runs, and deletion leaves nothing.
func TestReconcileDeliversSecretFiles(t *testing.T) {
	g := NewWithT(t)
	sbx := bound(newSandbox("s", withSecretFiles, func(sbx *dsv1alpha1.Sandbox) {
		sbx.Spec.Env = []dsv1alpha1.EnvVar{{Name: "PLAIN", Value: "visible"}}
	}))
	h := newHarness(t, sbx, credsSecret.DeepCopy())
	made := &madeSpecs{Driver: h.view}
	h.r.Driver = made
	got := h.passUntil(g, sbx, 5, isReady)
	names := topology.NamesOf(got)
	g.Expect(h.readFile(names.Primary(), "/run/secrets/dockside/token")).To(Equal(secretValue))

	_, err := h.pass(sbx) // the pass the primary's start brings
	g.Expect(err).NotTo(HaveOccurred())
	cs, err := h.docker.ListContainers(h.ctx, map[string]string{dsv1alpha1.LabelUID: string(got.UID)})
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range cs {
		_, role, service := dd.OwnerFromLabels(c.Labels)
		g.Expect(service).NotTo(Equal(secretsHolderService), "the secrets holder is gone")
		g.Expect(role).To(BeElementOf(dsv1alpha1.RolePrimary, dsv1alpha1.RoleHolder))
	}
	g.Expect(made.specs).To(HaveLen(3), "primary, workspace holder and secrets holder")
	for _, spec := range made.specs {
		for _, e := range spec.Env {
			g.Expect(e.Value).NotTo(ContainSubstring(secretValue), "env %s of %s", e.Name, spec.Name)
		}
		g.Expect(strings.Join(append(spec.Entrypoint, spec.Cmd...), " ")).NotTo(ContainSubstring(secretValue))
	}
	g.Expect(made.specs[names.Primary()].Env).To(ContainElement(dd.EnvVar{Name: "PLAIN", Value: "visible"}), "what env was checked in")
	g.Expect(h.readFile(names.Primary(), "/run/secrets/dockside/token")).To(Equal(secretValue), "the primary holds the files")
	g.Expect(statusText(h.get(sbx))).NotTo(ContainSubstring(secretValue))
	for _, e := range recorder.Drain(h.events) {
		g.Expect(e).NotTo(ContainSubstring(secretValue))
	}

	g.Expect(h.client.Delete(h.ctx, h.get(sbx))).To(Succeed())
	_, err = h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.get(sbx)).To(BeNil())
	g.Expect(h.owned(got.UID)).To(BeZero(), "the secrets volume is gone with the rest")
}

// statusText is the Sandbox's status as people read it.
func statusText(sbx *dsv1alpha1.Sandbox) string {
	var b strings.Builder
	for _, c := range sbx.Status.Conditions {
		b.WriteString(c.Reason + " " + c.Message + "\n")
	}
	return b.String()
}

// madeSpecs records the spec of every container the reconciler makes, by name.
type madeSpecs struct {
	dd.Driver
	specs map[string]dd.ContainerSpec
}

func (m *madeSpecs) EnsureContainer(ctx context.Context, spec dd.ContainerSpec) (dd.ContainerInfo, error) {
	if m.specs == nil {
		m.specs = map[string]dd.ContainerSpec{}
	}
	m.specs[spec.Name] = spec
	return m.Driver.EnsureContainer(ctx, spec)
}
