package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

func TestEnsureWorkspace(t *testing.T) {
	held := func(g Gomega, h *harness, s *scope) {
		g.Expect(h.container(s.holderName()).State).To(Equal(dd.StateRunning))
		g.Expect(h.volume(s.volumeName()).Exists).To(BeTrue())
	}
	runStepCases(t, (*Reconciler).ensureWorkspace, []stepCase{
		{
			name: "a new run gets its workspace volume, of its size, held by a running holder before its primary",
			sbx: atTopology(newSandbox("s", run(func(sbx *dsv1alpha1.Sandbox) {
				sbx.Spec.Workspace.Size = resource.MustParse("64Mi")
			})), 1),
			events: []string{"Normal " + EventWorkspaceCreated},
			check: func(g Gomega, h *harness, s *scope) {
				held(g, h, s)
				g.Expect(h.volume(s.volumeName()).SizeBytes).To(Equal(int64(64 << 20)))
				_, role, _ := dd.OwnerFromLabels(h.container(s.holderName()).Labels)
				g.Expect(role).To(Equal(dsv1alpha1.RoleHolder))
			},
		},
		{
			name: "a new session gets its workspace volume; its holder waits until the primary holds the volume",
			sbx: atTopology(newSandbox("s", func(sbx *dsv1alpha1.Sandbox) {
				sbx.Spec.Workspace.Size = resource.MustParse("64Mi")
			}), 1),
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.volume(s.volumeName()).SizeBytes).To(Equal(int64(64 << 20)))
				g.Expect(h.container(s.holderName()).Exists).To(BeFalse())
			},
		},
		{
			name:   "a session whose primary was made gets its holder",
			sbx:    atTopology(newSandbox("s"), 1),
			docker: func(h *harness, s *scope) { h.start(h.primarySpec(s)) },
			events: []string{"Normal " + EventWorkspaceCreated},
			check:  held,
		},
		{
			name:   "a session restored from a Checkpoint gets its holder first, to copy the files in through",
			sbx:    atTopology(newSandbox("s", func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.RestoreFrom = "ckpt" }), 1),
			events: []string{"Normal " + EventWorkspaceCreated},
			check:  held,
		},
		{
			name:   "a running holder is left alone",
			sbx:    atTopology(newSandbox("s"), 1),
			docker: func(h *harness, s *scope) { h.makeWorkspace(s) },
			check: func(g Gomega, h *harness, s *scope) {
				held(g, h, s)
				g.Expect(h.view.calls()).To(BeEmpty())
				g.Expect(h.docker.Calls(fake.OpEnsureVolume)).To(Equal(1), "only the setup's")
			},
		},
		{
			name: "a holder that stopped is started again, with a warning that files were lost",
			sbx:  atTopology(newSandbox("s"), 1),
			docker: func(h *harness, s *scope) {
				h.makeWorkspace(s)
				h.noErr(h.docker.Exit(s.holderName(), 137))
			},
			events: []string{"Warning " + EventHolderRestarted},
			check:  held,
		},
		{
			name:   "a holder made by a pass whose status write was lost is started",
			sbx:    atTopology(newSandbox("s"), 1),
			docker: func(h *harness, s *scope) { h.makeVolume(s); h.create(h.r.holderSpec(s)) },
			events: []string{"Normal " + EventWorkspaceCreated},
			check:  held,
		},
		{
			name:    "a workspace Docker can never make is Stalled",
			sbx:     atTopology(newSandbox("s"), 1),
			faults:  func(h *harness) { h.docker.FailNext(fake.OpEnsureVolume, dd.KindInvalidSpec) },
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonWorkspaceFailed},
			message: "creating the workspace volume failed",
		},
		{
			name:    "Docker unavailable while making the holder: retried",
			sbx:     atTopology(newSandbox("s", run()), 1),
			faults:  func(h *harness) { h.docker.FailNext(fake.OpEnsureContainer, dd.KindUnavailable) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "creating the workspace holder failed",
		},
		{
			name:    "a new holder whose start had an unknown outcome is removed, and made again by the retry",
			sbx:     atTopology(newSandbox("s", run()), 1),
			faults:  func(h *harness) { h.docker.FailNext(fake.OpStartContainer, dd.KindUncertain) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonWorkspaceFailed},
			message: "starting the workspace holder failed",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.holderName()).Exists).To(BeFalse(), "a daemon killed mid-start may never start it")
				g.Expect(h.volume(s.volumeName()).Exists).To(BeTrue())
			},
		},
		{
			name: "a holder that ran before and whose start had an unknown outcome is kept and retried",
			sbx:  atTopology(newSandbox("s"), 1),
			docker: func(h *harness, s *scope) {
				h.makeWorkspace(s)
				h.noErr(h.docker.Exit(s.holderName(), 137))
			},
			faults:  func(h *harness) { h.docker.FailNext(fake.OpStartContainer, dd.KindUncertain) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonWorkspaceFailed},
			message: "starting the workspace holder failed",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.holderName()).Exists).To(BeTrue())
			},
		},
	})
}
