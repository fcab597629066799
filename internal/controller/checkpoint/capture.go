package checkpoint

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// thawTimeout bounds the thaw after a capture; it runs even when the pass's context has ended, since a
// Sandbox must never stay frozen because its capture was cut short.
const thawTimeout = 30 * time.Second

// errNotRunning: the primary is neither running nor paused, so there is no live workspace to capture.
var errNotRunning = errors.New("the primary container is not running")

// storeRetry is how soon a capture waiting for room that captures under way hold looks again.
const storeRetry = 2 * time.Second

// capture takes the Sandbox from Executions' commands (Freezes; it waits while one runs), reserves room in
// the node's store for the most the capture may write (captureBound), freezes the Sandbox's primary if it
// runs (a paused one stays paused), copies the workspace (or the listed paths) out through the workspace
// holder into a temporary file, cut off at that bound, thaws, and only then hashes and stores the archive:
// the Sandbox is frozen for the copy alone, and the archive is streamed, never held in memory.
func (r *Reconciler) capture(ctx context.Context, ckpt *dsv1alpha1.Checkpoint, sbx *dsv1alpha1.Sandbox) (ctrl.Result, error) {
	switch _, running, ok := r.Freezes.Hold(sbx, ckpt.Name); {
	case !ok && running != "":
		// Freezing the primary under a command would run its deadline on while it is frozen, and capture a
		// workspace in the middle of its writes: the capture waits, woken when the command ends (Freezes).
		r.wait(ckpt, dsv1alpha1.CheckpointCapturing, dsv1alpha1.ReasonWaitingForRun,
			"waiting for Execution %s to finish before freezing Sandbox %q", running, sbx.Name)
		return ctrl.Result{}, nil
	case !ok:
		return ctrl.Result{RequeueAfter: status.StaleRetry}, nil // another Checkpoint of this Sandbox is being captured
	}
	start := time.Now()
	ctx = traceCapture(ctx, ckpt)
	defer recordCapture(ctx, ckpt, sbx)
	bound := captureBound(sbx.Spec.Workspace.Size.Value())
	c, err := r.Store.Create(bound, ckpt.Namespace)
	if err != nil {
		r.Freezes.Release(sbx.UID)
		return r.storeRefused(ckpt, err)
	}
	// The namespace's cap may leave less than the bound: the copy stops at that.
	room := c.Most()
	copyCtx, span := tracing.Start(ctx, "checkpoint.capture")
	frozen, err := r.copyOut(copyCtx, sbx, ckpt.Spec.Paths, &boundedWriter{w: c, left: room})
	tracing.End(span, err, string(dd.KindOf(err)))
	r.Freezes.Release(sbx.UID)
	r.Wake(client.ObjectKeyFromObject(sbx)) // its lifecycle was left alone meanwhile
	if err != nil {
		r.Store.Discard(c)
		if q := c.Quota(); q != nil && errors.Is(err, errCaptureTooLarge) {
			r.namespaceQuotaPassed(ckpt, sbx, room, q)
			return ctrl.Result{}, nil
		}
		return r.captureFailed(ckpt, sbx, bound, err)
	}
	_, span = tracing.Start(ctx, "checkpoint.store")
	a, err := r.Store.Commit(c, string(ckpt.UID))
	span.SetAttributes(tracing.Bytes(a.Size))
	tracing.End(span, err, "")
	if err != nil {
		r.fail(ckpt, dsv1alpha1.ReasonCaptureFailed, "storing the archive on node %s failed: %v", r.Options.Node, err)
		return ctrl.Result{}, nil
	}
	pushCtx, span := tracing.Start(ctx, "checkpoint.push")
	err = r.push(pushCtx, ckpt, a)
	tracing.End(span, err, "")
	if err != nil {
		r.fail(ckpt, dsv1alpha1.ReasonCaptureFailed, "pushing the archive to the checkpoint registry %s failed: %v", r.Registry, err)
		return ctrl.Result{}, nil
	}
	st := &ckpt.Status
	now := time.Now()
	st.Digest, st.SizeBytes, st.Size = a.Digest, a.Size, humanSize(a.Size)
	st.CapturedAt = &metav1.Time{Time: now}
	st.CaptureDuration = &metav1.Duration{Duration: now.Sub(start).Round(time.Millisecond)}
	st.FrozenDuration = &metav1.Duration{Duration: frozen.Round(time.Millisecond)}
	msg := fmt.Sprintf("workspace of Sandbox %q stored on node %s (%d bytes)", sbx.Name, r.Options.Node, a.Size)
	setPhase(ckpt, dsv1alpha1.CheckpointReady, dsv1alpha1.ReasonSucceeded, msg)
	r.event(ckpt, false, EventCaptured, "Capture", "%s in %s, the Sandbox frozen for %s", msg, st.CaptureDuration.Duration, st.FrozenDuration.Duration)
	ctrl.LoggerFrom(ctx).Info("Captured", "digest", a.Digest, "bytes", a.Size,
		"duration", st.CaptureDuration.Duration, "frozen", st.FrozenDuration.Duration)
	return ctrl.Result{RequeueAfter: r.Options.RecheckPeriod}, nil
}

// storeRefused handles a store without room for the capture, or a namespace without room under its cap
// (namespaceQuotaRefused): the Checkpoint waits while captures under way hold the room (they may give it
// back) and fails for good when the archives kept fill the store. Any other error (the store's folder not
// writable) is retried with backoff.
func (r *Reconciler) storeRefused(ckpt *dsv1alpha1.Checkpoint, err error) (ctrl.Result, error) {
	var full *archive.FullError
	var quota *archive.NamespaceQuotaError
	switch {
	case errors.As(err, &quota):
		return r.namespaceQuotaRefused(ckpt, quota), nil
	case errors.As(err, &full) && full.Transient():
		r.wait(ckpt, dsv1alpha1.CheckpointCapturing, dsv1alpha1.ReasonWaitingForStore,
			"waiting for captures under way on node %s: %v (the workspace's size plus archive overhead)", r.Options.Node, err)
		return ctrl.Result{RequeueAfter: storeRetry}, nil
	case errors.As(err, &full):
		r.fail(ckpt, dsv1alpha1.ReasonStoreFull,
			"the checkpoint store of node %s is full: %v (the workspace's size plus archive overhead); delete Checkpoints stored there or raise the agent's --checkpoint-store-bytes", r.Options.Node, err)
		return ctrl.Result{}, nil
	default:
		return ctrl.Result{}, err
	}
}

// captureFailed fails the Checkpoint for good, saying which part failed, except when Docker could not be
// reached (nothing happened): that is retried with backoff. bound is what the capture was cut off at.
func (r *Reconciler) captureFailed(ckpt *dsv1alpha1.Checkpoint, sbx *dsv1alpha1.Sandbox, bound int64, err error) (ctrl.Result, error) {
	switch {
	case dd.IsUnavailable(err):
		r.wait(ckpt, dsv1alpha1.CheckpointCapturing, dsv1alpha1.ReasonDockerUnavailable, "Docker did not answer; retrying")
		return ctrl.Result{}, err
	case errors.Is(err, errNotRunning):
		r.fail(ckpt, dsv1alpha1.ReasonSandboxNotRunning, "the primary container of Sandbox %q is not running", sbx.Name)
	case errors.Is(err, errCaptureTooLarge):
		r.fail(ckpt, dsv1alpha1.ReasonCaptureTooLarge,
			"the workspace archive of Sandbox %q passed %d bytes, the workspace's size (%s) plus archive overhead (an eighth and 1 MiB); sparse or oversized files, or very many empty files and folders, are not captured; nothing was stored",
			sbx.Name, bound, sbx.Spec.Workspace.Size.String())
	default:
		r.fail(ckpt, dsv1alpha1.ReasonCaptureFailed, "capturing the workspace of Sandbox %q failed: %v", sbx.Name, err)
	}
	return ctrl.Result{}, nil
}

// copyOut writes the workspace's archive to w with the primary frozen, and says how long it was frozen (0
// when it was paused already). The copy is bounded by CaptureTimeout; the thaw happens whatever the copy did.
func (r *Reconciler) copyOut(ctx context.Context, sbx *dsv1alpha1.Sandbox, paths []string, w io.Writer) (frozen time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.Options.CaptureTimeout)
	defer cancel()
	names := topology.NamesOf(sbx)
	primary, holder := names.Primary(), names.Holder()

	c, err := r.Driver.ObserveContainer(ctx, primary)
	switch {
	case err != nil:
		return 0, fmt.Errorf("observing the primary %s: %w", primary, err)
	case c.State == dd.StatePaused:
		return 0, copyWorkspace(ctx, r.Driver, holder, paths, w)
	case c.State != dd.StateRunning:
		return 0, errNotRunning
	}
	start := time.Now()
	ctx, span := tracing.Start(ctx, "checkpoint.freeze")
	defer func() { tracing.End(span, err, string(dd.KindOf(err))) }()
	if err := r.Driver.PauseContainer(ctx, primary); err != nil {
		return 0, fmt.Errorf("freezing the primary: %w", err)
	}
	err = copyWorkspace(ctx, r.Driver, holder, paths, w)
	thawCtx, cancelThaw := context.WithTimeout(context.WithoutCancel(ctx), thawTimeout)
	defer cancelThaw()
	if thawErr := r.Driver.UnpauseContainer(thawCtx, primary); thawErr != nil {
		err = errors.Join(err, fmt.Errorf("thawing the primary: %w", thawErr))
	}
	return time.Since(start), err
}

// copyWorkspace streams the holder's workspace to w as one tar archive with names relative to the
// workspace: the whole of it as Docker sends it, or each listed path under its own place in the workspace
// (Docker names a copied path by its last element only).
func copyWorkspace(ctx context.Context, d dd.Driver, holder string, paths []string, w io.Writer) error {
	if len(paths) == 0 {
		rc, err := d.CopyFrom(ctx, holder, topology.HolderMountPath+"/.")
		if err != nil {
			return fmt.Errorf("copying the workspace out: %w", err)
		}
		defer rc.Close()
		if _, err := io.Copy(w, rc); err != nil {
			return fmt.Errorf("copying the workspace out: %w", err)
		}
		return nil
	}
	tw := tar.NewWriter(w)
	for _, p := range paths {
		p = path.Clean(p)
		rc, err := d.CopyFrom(ctx, holder, path.Join(topology.HolderMountPath, p))
		if dd.IsNotFound(err) {
			return fmt.Errorf("path %q is not in the workspace", p)
		}
		if err != nil {
			return fmt.Errorf("copying path %q out: %w", p, err)
		}
		err = retar(tw, rc, path.Dir(p))
		rc.Close()
		if err != nil {
			return fmt.Errorf("copying path %q out: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("ending the archive: %w", err)
	}
	return nil
}

// retar copies every entry of the tar stream r into tw, placed under dir.
func retar(tw *tar.Writer, r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the copied archive: %w", err)
		}
		hdr.Name = path.Join(dir, hdr.Name) + trailingSlash(hdr.Name)
		if hdr.Typeflag == tar.TypeLink { // a hard link names another entry of the same stream
			hdr.Linkname = path.Join(dir, hdr.Linkname)
		}
		delete(hdr.PAXRecords, "path") // the header's own fields say it now
		delete(hdr.PAXRecords, "linkpath")
		hdr.Format = tar.FormatUnknown // a longer name may need PAX
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing the entry %s: %w", hdr.Name, err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("copying the entry %s: %w", hdr.Name, err)
		}
	}
}

func trailingSlash(name string) string {
	if len(name) > 0 && name[len(name)-1] == '/' {
		return "/"
	}
	return ""
}
