package sandboxclaim

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/templates"
	"github.com/dockside-dev/dockside/internal/testutil/faultapi"
)

// behind is the agent's cache of a faultapi.Server: it shows every object as stored, except the claim, which it
// shows as claim when that is set (a copy older than the API server's).
type behind struct {
	client.Client
	claim *dsv1alpha1.SandboxClaim
}

func (b *behind) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c, ok := obj.(*dsv1alpha1.SandboxClaim); ok && b.claim != nil && key == client.ObjectKeyFromObject(b.claim) {
		b.claim.DeepCopyInto(c)
		return nil
	}
	return b.Client.Get(ctx, key, obj, opts...)
}

// noUnbound is a cache of unbound Sandboxes that holds none.
type noUnbound struct{ cache.Cache }

func (noUnbound) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

const node = "node-a"

// world is a template that lets claims set env, its pool with two warm Ready Sandboxes on this node, and a
// claim of it that no agent has seen yet.
func world(t *testing.T) (*faultapi.Server, *dsv1alpha1.SandboxClaim) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tpl := &dsv1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tpl"},
		Spec: dsv1alpha1.SandboxTemplateSpec{Sandbox: dsv1alpha1.SandboxSpec{Image: "busybox"},
			ClaimOverrides: []dsv1alpha1.ClaimOverride{dsv1alpha1.OverrideEnv}}}
	pool := &dsv1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool", UID: "pool-uid"},
		Spec: dsv1alpha1.SandboxWarmPoolSpec{TemplateRef: dsv1alpha1.LocalObjectReference{Name: tpl.Name}, Replicas: 2}}
	claim := &dsv1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "claim-uid", Generation: 1},
		Spec: dsv1alpha1.SandboxClaimSpec{PoolRef: dsv1alpha1.LocalObjectReference{Name: pool.Name},
			Env: []dsv1alpha1.ExecutionEnvVar{{Name: "TASK", Value: "t"}}}}
	objs := []client.Object{tpl, pool, claim}
	for i := range 2 {
		sbx := templates.Warm(pool, tpl, templates.MemberName(pool.Name, i), templates.Hash(tpl))
		sbx.Spec.NodeName = node
		sbx.Status.Conditions = []metav1.Condition{{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: "Running", LastTransitionTime: metav1.Now()}}
		objs = append(objs, sbx)
	}
	api := faultapi.New(scheme, []client.Object{&dsv1alpha1.Sandbox{}, &dsv1alpha1.SandboxClaim{}}, objs...)
	return api, claim
}

func reconciler(api *faultapi.Server, cache *behind) *Reconciler {
	return &Reconciler{Client: cache, APIReader: api, Unbound: noUnbound{}, Options: Options{Node: node}, flight: newInFlight()}
}

func pass(t *testing.T, r *Reconciler, claim *dsv1alpha1.SandboxClaim) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(claim)}); err != nil {
		t.Fatal(err)
	}
}

func stored(t *testing.T, api *faultapi.Server, claim *dsv1alpha1.SandboxClaim) *dsv1alpha1.SandboxClaim {
	t.Helper()
	out := &dsv1alpha1.SandboxClaim{}
	if err := api.Get(context.Background(), client.ObjectKeyFromObject(claim), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// claimed is the Sandboxes labelled for the claim.
func claimed(t *testing.T, api *faultapi.Server, claim *dsv1alpha1.SandboxClaim) []string {
	t.Helper()
	var list dsv1alpha1.SandboxList
	if err := api.List(context.Background(), &list, client.MatchingLabels{dsv1alpha1.LabelClaim: claim.Name}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Name)
	}
	return out
}

// The Sandbox's event brings a pass before the claim's own: that pass reads the claim as it was before its
// status named the Sandbox. Writing the status again from that copy could only conflict; at 20 claims at once
// those conflicts were one API write in six.
func TestAPassBehindItsOwnStatusWriteWritesNothing(t *testing.T) {
	api, claim := world(t)
	cache := &behind{Client: api}
	r := reconciler(api, cache)
	unseen := stored(t, api, claim)
	pass(t, r, claim)
	if api.Writes != 2 {
		t.Fatalf("a warm binding took %d writes, not 2 (the Sandbox's, the claim's status)", api.Writes)
	}
	bound := stored(t, api, claim)
	if bound.Status.SandboxName == "" || !meta.IsStatusConditionTrue(bound.Status.Conditions, dsv1alpha1.ConditionReady) {
		t.Fatalf("the claim is not Ready with its Sandbox: %+v", bound.Status)
	}

	cache.claim = unseen
	pass(t, r, claim)
	if api.Writes != 2 {
		t.Errorf("a pass that read the claim from before its binding made %d more write(s)", api.Writes-2)
	}

	cache.claim = nil
	pass(t, r, claim)
	if api.Writes != 2 {
		t.Errorf("a pass once the cache caught up made %d more write(s)", api.Writes-2)
	}
	if now := stored(t, api, claim); now.Status.SandboxName != bound.Status.SandboxName || !meta.IsStatusConditionTrue(now.Status.Conditions, dsv1alpha1.ConditionReady) {
		t.Errorf("the claim lost its binding: %+v", now.Status)
	}
	if got := claimed(t, api, claim); len(got) != 1 {
		t.Errorf("the claim holds %v, not one Sandbox", got)
	}
}

// A binding whose status write the API server refused converges on the next pass: the claim names the
// Sandbox it holds, and no second Sandbox is taken.
func TestALostStatusWriteIsWrittenAgain(t *testing.T) {
	api, claim := world(t)
	r := reconciler(api, &behind{Client: api})
	api.Fault = apierrors.NewConflict(schema.GroupResource{Group: dsv1alpha1.GroupVersion.Group, Resource: "sandboxclaims"},
		claim.Name, errors.New("the object has been modified"))
	pass(t, r, claim)
	if now := stored(t, api, claim); now.Status.SandboxName != "" {
		t.Fatalf("the refused write stood: %+v", now.Status)
	}
	held := claimed(t, api, claim)
	if len(held) != 1 {
		t.Fatalf("the claim holds %v, not one Sandbox", held)
	}

	pass(t, r, claim)
	now := stored(t, api, claim)
	if now.Status.SandboxName != held[0] || !meta.IsStatusConditionTrue(now.Status.Conditions, dsv1alpha1.ConditionReady) {
		t.Errorf("the claim does not name the Sandbox it holds (%s) Ready: %+v", held[0], now.Status)
	}
	if got := claimed(t, api, claim); len(got) != 1 {
		t.Errorf("the claim holds %v, not one Sandbox", got)
	}
}
