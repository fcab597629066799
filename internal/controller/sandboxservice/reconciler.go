// Package sandboxservice holds the SandboxService reconciler: a service's status (usable, used by whom) and
// its in-use protection. SandboxServices belong to no node; every agent reconciles them alike.
package sandboxservice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// Reconciler keeps a SandboxService's status (is its spec usable, which Sandboxes use it) and
// its in-use protection: while any Sandbox names it, its deletion waits (like kubernetes.io/pvc-protection).
// SandboxServices belong to no node, so every agent reconciles them; users are counted over every node from
// the API server, so that all agents arrive at the same status and only the first one writes it.
type Reconciler struct {
	client.Client
	APIReader client.Reader // lists the namespace's Sandboxes of every node, fresh; reads Secrets
	Unbound   cache.Cache   // Sandboxes bound to no node, watched beside the manager's cache
	Options   Options
}

// Options are the agent's timing.
type Options struct {
	SpecRetry time.Duration // how soon a service waiting for a Secret looks again
}

// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxservices,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxservices/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxservices/finalizers,verbs=update
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxes,verbs=list
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconcile gets the SandboxService, counts its users, protects it (or lets it go once unused) and writes
// its status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	svc := &dsv1alpha1.SandboxService{}
	if err := r.Get(ctx, req.NamespacedName, svc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	users, err := r.users(ctx, svc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !svc.DeletionTimestamp.IsZero() && len(users) == 0 {
		return r.release(ctx, svc)
	}
	if err := r.ensureProtected(ctx, svc); err != nil {
		return status.RequeueOnConflict(err)
	}
	missing, err := r.missingSecret(ctx, svc)
	if err != nil {
		return ctrl.Result{}, err
	}
	pass := status.Begin(r.Client, svc)
	defer pass.End(ctx, svc, &result, &reterr)
	setServiceStatus(svc, users, missing)
	if missing != "" {
		return ctrl.Result{RequeueAfter: r.Options.SpecRetry}, nil // Secrets are not watched
	}
	return ctrl.Result{}, nil
}

// users names the Sandboxes of the namespace, on any node, that name the SandboxService, sorted. Sandboxes
// being deleted count: their instance of the service runs until their cleanup is done.
func (r *Reconciler) users(ctx context.Context, svc *dsv1alpha1.SandboxService) ([]string, error) {
	var list dsv1alpha1.SandboxList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(svc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the Sandboxes of namespace %s: %w", svc.Namespace, err)
	}
	var out []string
	for _, sbx := range list.Items {
		if slices.Contains(sbx.Spec.Services, svc.Name) {
			out = append(out, sbx.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ensureProtected adds the in-use finalizer to a SandboxService that is not being deleted. Every
// SandboxService carries it, used or not, so that a Sandbox created a moment before a deletion is counted.
func (r *Reconciler) ensureProtected(ctx context.Context, svc *dsv1alpha1.SandboxService) error {
	if !svc.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(svc, dsv1alpha1.FinalizerInUse) {
		return nil
	}
	patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(svc, dsv1alpha1.FinalizerInUse)
	if err := r.Patch(ctx, svc, patch); err != nil {
		return fmt.Errorf("adding the in-use finalizer: %w", err)
	}
	return nil
}

// release lets a SandboxService that no Sandbox names any more go.
func (r *Reconciler) release(ctx context.Context, svc *dsv1alpha1.SandboxService) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(svc, dsv1alpha1.FinalizerInUse) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(svc, dsv1alpha1.FinalizerInUse)
	if err := r.Patch(ctx, svc, patch); err != nil {
		return status.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	ctrl.LoggerFrom(ctx).Info("No Sandbox uses the SandboxService any more; in-use protection removed")
	return ctrl.Result{}, nil
}

// setServiceStatus writes users, usability (missing names what keeps the service from running, if anything)
// and generation into the status.
func setServiceStatus(svc *dsv1alpha1.SandboxService, users []string, missing string) {
	st := &svc.Status
	st.UsedByCount = int32(len(users))
	st.UsedBy = users[:min(len(users), dsv1alpha1.MaxUsedBy)]
	if len(st.UsedBy) == 0 {
		st.UsedBy = nil
	}
	switch {
	case len(users) == 0:
		status.Set(svc, dsv1alpha1.ConditionInUse, false, dsv1alpha1.ReasonNotInUse, "no Sandbox names this SandboxService")
	case !svc.DeletionTimestamp.IsZero():
		status.Set(svc, dsv1alpha1.ConditionInUse, true, dsv1alpha1.ReasonInUse,
			"deletion waits until no Sandbox names it; used by "+usersText(users))
	default:
		status.Set(svc, dsv1alpha1.ConditionInUse, true, dsv1alpha1.ReasonInUse, "used by "+usersText(users))
	}
	if missing != "" {
		status.Set(svc, dsv1alpha1.ConditionReady, false, dsv1alpha1.ReasonSecretNotFound, missing)
	} else {
		status.Set(svc, dsv1alpha1.ConditionReady, true, dsv1alpha1.ReasonAccepted, "the service can be run")
	}
}

// usersText names the first few users and how many more there are.
func usersText(users []string) string {
	const named = 5
	if len(users) <= named {
		return "Sandbox " + strings.Join(users, ", ")
	}
	return fmt.Sprintf("Sandbox %s and %d more", strings.Join(users[:named], ", "), len(users)-named)
}

// missingSecret checks what the CRD cannot: that every Secret key the service's env names exists. It says
// which one is missing, in words for people, or "" when none is. Secrets are read past the cache, as the
// Sandbox reconciler reads them, so that the agent never holds every Secret in memory.
func (r *Reconciler) missingSecret(ctx context.Context, svc *dsv1alpha1.SandboxService) (string, error) {
	for _, e := range svc.Spec.Env {
		if e.ValueFrom == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		secret := &corev1.Secret{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: svc.Namespace, Name: ref.Name}, secret)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("env %s names Secret %q, which does not exist", e.Name, ref.Name), nil
		case err != nil:
			return "", fmt.Errorf("reading Secret %s: %w", ref.Name, err)
		case secret.Data[ref.Key] == nil:
			return fmt.Sprintf("env %s names key %q of Secret %q, which it does not have", e.Name, ref.Key, ref.Name), nil
		}
	}
	return "", nil
}
