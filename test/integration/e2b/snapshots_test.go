//go:build integration

package e2b_test

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/e2b"
)

// allowCheckpoints lets the tenant's key make, read and delete Checkpoints, as the dockside-edit role does.
func allowCheckpoints(t tenant) {
	GinkgoHelper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: t.ns, Name: "e2b-snapshots"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"dockside.dev"}, Resources: []string{"checkpoints"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
	}}
	Expect(k8s.Create(ctx(), role)).To(Succeed())
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: t.ns, Name: "e2b-snapshots"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "e2b-snapshots"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent", Namespace: t.ns}}}
	Expect(k8s.Create(ctx(), rb)).To(Succeed())
}

// captureEveryNew does what an agent would with each new Checkpoint of ns: it turns Ready, or Failed when its
// snapshot's name is "broken".
func captureEveryNew(ns string) {
	c, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	go func() {
		defer GinkgoRecover()
		for c.Err() == nil {
			var list dsv1alpha1.CheckpointList
			if k8s.List(c, &list, client.InNamespace(ns)) == nil {
				for i := range list.Items {
					cp := &list.Items[i]
					if cp.Status.Phase != "" {
						continue
					}
					cond := metav1.Condition{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Captured", Message: "test"}
					cp.Status.Phase = dsv1alpha1.CheckpointReady
					if cp.Labels[e2b.LabelSnapshotName] == "broken" {
						cp.Status.Phase = dsv1alpha1.CheckpointFailed
						cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "CaptureFailed", "the copy broke"
					}
					cond.ObservedGeneration = cp.Generation
					meta.SetStatusCondition(&cp.Status.Conditions, cond)
					_ = k8s.Status().Update(c, cp)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
}

type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

var _ = Describe("The E2B gateway's snapshots", func() {
	It("are Checkpoints of the sandbox, which a create naming the snapshot restores from, by ID or by name", func() {
		a := newTenant(true)
		allowCheckpoints(a)
		template(a.ns, "base")
		readyEveryNew(a.ns)
		captureEveryNew(a.ns)
		var sb created
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "base", "timeout": 120}, &sb)).To(Equal(http.StatusCreated))

		var snap snapshotInfo
		Expect(call(a.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/snapshots", map[string]any{"name": "after-install"}, &snap)).To(Equal(http.StatusCreated))
		Expect(snap.Names).To(Equal([]string{"after-install"}))
		var cp dsv1alpha1.Checkpoint
		Expect(k8s.Get(ctx(), client.ObjectKey{Namespace: a.ns, Name: snap.SnapshotID}, &cp)).To(Succeed())
		Expect(cp.Spec.SandboxName).To(Equal(sb.SandboxID))
		Expect(cp.Spec.Paths).To(BeEmpty(), "the whole workspace")
		Expect(cp.Labels).To(HaveKeyWithValue(e2b.LabelTemplate, "base"))
		Expect(cp.Labels).To(HaveKeyWithValue(e2b.LabelSnapshotOf, sb.SandboxID))

		var listed []snapshotInfo
		Expect(call(a.key, http.MethodGet, "/snapshots?sandboxID="+sb.SandboxID, nil, &listed)).To(Equal(http.StatusOK))
		Expect(listed).To(Equal([]snapshotInfo{snap}))
		Expect(call(a.key, http.MethodGet, "/snapshots?sandboxID=e2b-other", nil, &listed)).To(Equal(http.StatusOK))
		Expect(listed).To(BeEmpty())

		for _, id := range []string{snap.SnapshotID, "after-install"} {
			var restored created
			Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": id, "timeout": 60}, &restored)).To(Equal(http.StatusCreated), id)
			Expect(restored.TemplateID).To(Equal("base"))
			var sbx dsv1alpha1.Sandbox
			Expect(k8s.Get(ctx(), client.ObjectKey{Namespace: a.ns, Name: restored.SandboxID}, &sbx)).To(Succeed())
			Expect(sbx.Spec.RestoreFrom).To(Equal(snap.SnapshotID), id)
			Expect(sbx.Spec.Image).To(Equal("dockside.dev/busybox:local"), "the snapshotted sandbox's template")
			Expect(sbx.Labels).To(HaveKeyWithValue(e2b.LabelTemplate, "base"))
		}

		// A key of another namespace finds neither the sandbox nor the snapshot.
		b := newTenant(true)
		allowCheckpoints(b)
		var e e2bError
		Expect(call(b.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/snapshots", nil, &e)).To(Equal(http.StatusNotFound))
		Expect(call(b.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": snap.SnapshotID}, &e)).To(Equal(http.StatusNotFound))
		Expect(call(b.key, http.MethodGet, "/snapshots", nil, &listed)).To(Equal(http.StatusOK))
		Expect(listed).To(BeEmpty())

		// Deleting the snapshot (the SDKs call DELETE /templates/{id}) deletes its Checkpoint.
		Expect(call(a.key, http.MethodDelete, "/templates/"+snap.SnapshotID, nil, nil)).To(Equal(http.StatusNoContent))
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKeyFromObject(&cp), &cp))
		}).Should(BeTrue())
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": snap.SnapshotID}, &e)).To(Equal(http.StatusNotFound))
		Expect(e.Message).To(ContainSubstring("Ready snapshot"))
	})

	It("fails a snapshot whose Checkpoint fails, leaving no Checkpoint, and refuses one that RBAC refuses", func() {
		a := newTenant(true)
		allowCheckpoints(a)
		template(a.ns, "base")
		readyEveryNew(a.ns)
		captureEveryNew(a.ns)
		var sb created
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "base"}, &sb)).To(Equal(http.StatusCreated))
		var e e2bError
		Expect(call(a.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/snapshots", map[string]any{"name": "broken"}, &e)).To(Equal(http.StatusInternalServerError))
		Expect(e.Message).To(ContainSubstring("CaptureFailed: the copy broke"))
		Eventually(func() []dsv1alpha1.Checkpoint {
			var list dsv1alpha1.CheckpointList
			Expect(k8s.List(ctx(), &list, client.InNamespace(a.ns))).To(Succeed())
			return list.Items
		}).Should(BeEmpty())

		// Without rights on Checkpoints the API server's refusal is the answer.
		c := newTenant(true)
		template(c.ns, "base")
		readyEveryNew(c.ns)
		Expect(call(c.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "base"}, &sb)).To(Equal(http.StatusCreated))
		Expect(call(c.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/snapshots", nil, &e)).To(Equal(http.StatusForbidden))
		Expect(e.Message).To(ContainSubstring("checkpoints"))
	})
})
