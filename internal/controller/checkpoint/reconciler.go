// Package checkpoint holds the Checkpoint reconciler: it captures the workspaces of its node's Sandboxes
// into the node's archive store (freezing the primary for the copy alone) and releases archives of deleted
// Checkpoints. Restores are the Sandbox reconciler's, as they happen while a Sandbox starts.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/checkpointregistry"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/status"
)

// Options are the node and the agent's timing for Checkpoints.
type Options struct {
	Node           string        // this agent's node name
	CaptureTimeout time.Duration // bound on one copy out of a workspace (the Sandbox is frozen meanwhile)
	RecheckPeriod  time.Duration // how often a Ready Checkpoint's archive is looked for on disk
}

// Reconciler captures Checkpoints of the Sandboxes on its node into the node's archive store and
// removes their archives when they are deleted. A Checkpoint belongs to the node that stores its archive
// (status.nodeName); before it has one, to the node its Sandbox is bound to.
type Reconciler struct {
	client.Client
	APIReader client.Reader // reads Sandboxes of any node, to tell a missing one from another node's
	Driver    dd.Driver
	Store     *archive.Store
	Registry  *checkpointregistry.Registry   // where archives are pushed too, to restore on any node; nil: none
	Freezes   *handoff.Freezes               // shared with the Sandbox reconciler
	Wake      func(key types.NamespacedName) // brings a pass over a Sandbox once it is thawed
	Recorder  events.EventRecorder
	Options   Options
}

// +kubebuilder:rbac:groups=dockside.dev,resources=checkpoints,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=dockside.dev,resources=checkpoints/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dockside.dev,resources=checkpoints/finalizers,verbs=update
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxes,verbs=get

// Reconcile gets the Checkpoint, leaves it alone when another node stores it, either releases its archive
// (deletion) or takes it on when its Sandbox runs here (the finalizer), and then moves it on, writing its
// status once at the end: a Ready one has its archive looked at, any other is captured when it can be.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	ckpt := &dsv1alpha1.Checkpoint{}
	if err := r.Get(ctx, req.NamespacedName, ckpt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ckpt.Status.NodeName != "" && ckpt.Status.NodeName != r.Options.Node {
		return ctrl.Result{}, nil
	}
	if !ckpt.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, ckpt)
	}
	if ckpt.Status.Phase == dsv1alpha1.CheckpointFailed {
		return ctrl.Result{}, nil // for good
	}
	sbx, err := r.localSandbox(ctx, ckpt)
	if err != nil {
		return ctrl.Result{}, err
	}
	if sbx != nil {
		if err := r.ensureFinalizer(ctx, ckpt); err != nil {
			return status.RequeueOnConflict(err)
		}
	}

	pass := status.Begin(r.Client, ckpt)
	defer pass.End(ctx, ckpt, &result, &reterr)
	switch {
	case ckpt.Status.Phase == dsv1alpha1.CheckpointReady:
		return r.checkArchive(ckpt)
	case sbx == nil:
		return r.reportElsewhere(ctx, ckpt)
	default:
		return r.reconcileNormal(ctx, ckpt, sbx)
	}
}

// checkArchive turns a Ready Checkpoint Failed when its archive is gone or damaged on disk (a cheap look:
// presence and size; a restore verifies every byte and sets a corrupt archive aside, which this then sees).
func (r *Reconciler) checkArchive(ckpt *dsv1alpha1.Checkpoint) (ctrl.Result, error) {
	err := r.Store.Check(archive.Archive{Digest: ckpt.Status.Digest, Size: ckpt.Status.SizeBytes})
	switch {
	case errors.Is(err, archive.ErrMissing):
		r.fail(ckpt, dsv1alpha1.ReasonArchiveMissing, "the archive %s is missing from node %s; delete this Checkpoint and capture again", ckpt.Status.Digest, r.Options.Node)
	case errors.Is(err, archive.ErrCorrupt):
		r.fail(ckpt, dsv1alpha1.ReasonArchiveCorrupt, "the archive on node %s no longer matches its digest %s; delete this Checkpoint and capture again", r.Options.Node, ckpt.Status.Digest)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("checking the archive in the checkpoint store: %w", err) // the store could not be looked at (permissions, I/O); retried with backoff
	default:
		return ctrl.Result{RequeueAfter: r.Options.RecheckPeriod}, nil
	}
	return ctrl.Result{}, nil
}
