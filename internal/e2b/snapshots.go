package e2b

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// An E2B snapshot is a Checkpoint of the sandbox's workspace (docs/e2b.md, "Snapshots"): its snapshotID is the
// Checkpoint's name, and a create whose templateID names it (or the snapshot's name) starts a Sandbox of the
// snapshotted sandbox's template that restores from it (spec.restoreFrom).
const (
	// LabelSnapshotOf marks a Checkpoint made through the gateway and names the Sandbox it was taken of; the
	// Checkpoint's LabelTemplate names that Sandbox's template.
	LabelSnapshotOf = "e2b.dockside.dev/sandbox"
	// LabelSnapshotName holds the name the snapshot call gave (E2B's names), which a create may name instead
	// of the snapshotID: the newest Ready Checkpoint of that name.
	LabelSnapshotName = "e2b.dockside.dev/snapshot-name"
)

// newSnapshot is the body of POST /sandboxes/{id}/snapshots.
type newSnapshot struct {
	Name string `json:"name,omitempty"`
}

// snapshotInfo is E2B's answer of a snapshot, and one entry of GET /snapshots.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func infoOf(cp *dsv1alpha1.Checkpoint) snapshotInfo {
	info := snapshotInfo{SnapshotID: cp.Name, Names: []string{}}
	if n := cp.Labels[LabelSnapshotName]; n != "" {
		info.Names = append(info.Names, n)
	}
	return info
}

// snapshot serves POST /sandboxes/{id}/snapshots: a Checkpoint of the sandbox's workspace, answered once it is
// Ready (the agent freezes the sandbox for the copy alone, where E2B pauses it). A Checkpoint that fails or is
// not Ready within the create wait is deleted, and the call fails.
func (g *Gateway) snapshot(w http.ResponseWriter, r *http.Request, c *caller) {
	var req newSnapshot
	if err := readBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Name != "" {
		if errs := validation.IsValidLabelValue(req.Name); len(errs) > 0 {
			writeError(w, errorf(http.StatusBadRequest, "name %q: %s", req.Name, strings.Join(errs, "; ")))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.createWait)
	defer cancel()
	sbx, err := sandboxOf(ctx, c, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	tpl := sbx.Labels[LabelTemplate]
	if tpl == "" {
		writeError(w, errorf(http.StatusBadRequest, "sandbox %q was not made through the E2B gateway: no template is known to restore its snapshot on", sbx.Name))
		return
	}
	cp := &dsv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "e2b-snap-", Namespace: c.namespace,
			Labels: map[string]string{LabelTemplate: tpl, LabelSnapshotOf: sbx.Name},
		},
		Spec: dsv1alpha1.CheckpointSpec{SandboxName: sbx.Name},
	}
	if req.Name != "" {
		cp.Labels[LabelSnapshotName] = req.Name
	}
	if err := c.client.Create(ctx, cp); err != nil {
		writeError(w, fromAPI(err, fmt.Sprintf("creating a Checkpoint of sandbox %q", sbx.Name)))
		return
	}
	if err := g.waitCheckpoint(ctx, c, cp); err != nil {
		undo(ctx, c, cp)
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, infoOf(cp))
}

// waitCheckpoint waits until the Checkpoint is Ready, reading it into cp.
func (g *Gateway) waitCheckpoint(ctx context.Context, c *caller, cp *dsv1alpha1.Checkpoint) error {
	for {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
			return fromAPI(err, "reading the Checkpoint "+cp.Name)
		}
		switch cp.Status.Phase {
		case dsv1alpha1.CheckpointReady:
			return nil
		case dsv1alpha1.CheckpointFailed:
			why := "it failed"
			if rc := meta.FindStatusCondition(cp.Status.Conditions, dsv1alpha1.ConditionReady); rc != nil {
				why = rc.Reason + ": " + rc.Message
			}
			return errorf(http.StatusInternalServerError, "the snapshot (Checkpoint %s) of sandbox %q failed: %s", cp.Name, cp.Spec.SandboxName, why)
		}
		if err := sleep(ctx, pollEvery); err != nil {
			return errorf(http.StatusGatewayTimeout, "the snapshot (Checkpoint %s) of sandbox %q was not Ready within %s", cp.Name, cp.Spec.SandboxName, g.createWait)
		}
	}
}

// listSnapshots serves GET /snapshots[?sandboxID=ID]: the gateway's Checkpoints of the caller's namespace,
// oldest first, all in one page.
func (g *Gateway) listSnapshots(w http.ResponseWriter, r *http.Request, c *caller) {
	sel := client.HasLabels{LabelSnapshotOf}
	opts := []client.ListOption{client.InNamespace(c.namespace), sel}
	if id := r.URL.Query().Get("sandboxID"); id != "" {
		opts = []client.ListOption{client.InNamespace(c.namespace), client.MatchingLabels{LabelSnapshotOf: id}}
	}
	var cps dsv1alpha1.CheckpointList
	if err := c.client.List(r.Context(), &cps, opts...); err != nil {
		writeError(w, fromAPI(err, "listing Checkpoints"))
		return
	}
	slices.SortFunc(cps.Items, func(a, b dsv1alpha1.Checkpoint) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	out := []snapshotInfo{}
	for i := range cps.Items {
		if cps.Items[i].DeletionTimestamp == nil {
			out = append(out, infoOf(&cps.Items[i]))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteTemplate serves DELETE /templates/{id}, which the SDKs call to delete a snapshot: the gateway's
// Checkpoint of that name goes. Templates themselves are SandboxTemplates, which the gateway does not manage.
func (g *Gateway) deleteTemplate(w http.ResponseWriter, r *http.Request, c *caller) {
	id := r.PathValue("id")
	var cp dsv1alpha1.Checkpoint
	err := c.client.Get(r.Context(), client.ObjectKey{Namespace: c.namespace, Name: id}, &cp)
	switch {
	case apierrors.IsNotFound(err) || err == nil && cp.Labels[LabelSnapshotOf] == "":
		writeError(w, errorf(http.StatusNotImplemented, "%q is no snapshot of the E2B gateway in namespace %s: templates are SandboxTemplates, deleted with kubectl", id, c.namespace))
		return
	case err != nil:
		writeError(w, fromAPI(err, fmt.Sprintf("snapshot %q", id)))
		return
	}
	if err := c.client.Delete(r.Context(), &cp); client.IgnoreNotFound(err) != nil {
		writeError(w, fromAPI(err, fmt.Sprintf("deleting snapshot %q", id)))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// snapshotFor is the Ready Checkpoint of the gateway that id names, as its name or as a snapshot's given name
// (the newest); nil when it names none. A key that may not read Checkpoints has no snapshots: its create of
// an unknown template is answered as before snapshots were served, 404.
func snapshotFor(ctx context.Context, c *caller, id string) (*dsv1alpha1.Checkpoint, error) {
	var cp dsv1alpha1.Checkpoint
	err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: id}, &cp)
	switch {
	case err == nil && cp.Labels[LabelSnapshotOf] != "" && cp.Status.Phase == dsv1alpha1.CheckpointReady:
		return &cp, nil
	case apierrors.IsForbidden(err):
		return nil, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fromAPI(err, fmt.Sprintf("snapshot %q", id))
	}
	if len(validation.IsValidLabelValue(id)) > 0 {
		return nil, nil
	}
	var cps dsv1alpha1.CheckpointList
	if err := c.client.List(ctx, &cps, client.InNamespace(c.namespace), client.MatchingLabels{LabelSnapshotName: id}); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil
		}
		return nil, fromAPI(err, "listing Checkpoints")
	}
	var newest *dsv1alpha1.Checkpoint
	for i := range cps.Items {
		cp := &cps.Items[i]
		if cp.Status.Phase == dsv1alpha1.CheckpointReady && cp.DeletionTimestamp == nil &&
			(newest == nil || cp.CreationTimestamp.After(newest.CreationTimestamp.Time)) {
			newest = cp
		}
	}
	return newest, nil
}

// templateOf resolves a create's templateID: a SandboxTemplate of that name, or else a snapshot, whose
// Sandbox is then made of the snapshotted sandbox's template and restores from its Checkpoint (restoreFrom
// names it; "" for a plain template).
func templateOf(ctx context.Context, c *caller, id string) (tpl *dsv1alpha1.SandboxTemplate, restoreFrom string, err error) {
	if id == "" {
		return nil, "", errorf(http.StatusBadRequest, "templateID is required: the name of a SandboxTemplate in namespace %s, or a snapshot's ID", c.namespace)
	}
	tpl = &dsv1alpha1.SandboxTemplate{}
	err = getTemplate(ctx, c, id, tpl)
	switch {
	case err == nil:
		return tpl, "", nil
	case !apierrors.IsNotFound(err):
		return nil, "", fromAPI(err, fmt.Sprintf("template %q (a SandboxTemplate in namespace %s)", id, c.namespace))
	}
	cp, err := snapshotFor(ctx, c, id)
	switch {
	case err != nil:
		return nil, "", err
	case cp == nil:
		return nil, "", errorf(http.StatusNotFound, "template %q (a SandboxTemplate in namespace %s, or a Ready snapshot) not found", id, c.namespace)
	}
	name := cp.Labels[LabelTemplate]
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, tpl); err != nil {
		return nil, "", fromAPI(err, fmt.Sprintf("template %q of snapshot %q", name, cp.Name))
	}
	return tpl, cp.Name, nil
}
