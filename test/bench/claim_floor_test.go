package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// floorRequest is one of a floor's requests at once, the i-th of its round: a create and its writes.
type floorRequest func(ctx context.Context, round, i int) error

// apiFloor times n at once of what a warm claim asks of the API server, with nothing else in the way. No
// claim that makes those writes can be Ready sooner on this API server than they take here. Twenty at once
// take tens of milliseconds, so one batch is at the mercy of a single pause: it runs floorRounds batches and
// reports all their times and the median batch's wall time.
func apiFloor(ctx context.Context, n int, request floorRequest) ([]time.Duration, time.Duration, error) {
	var all, walls []time.Duration
	for round := range floorRounds {
		times, wall, err := timeAll(n, func(i int) (time.Duration, error) {
			begun := time.Now()
			err := request(ctx, round, i)
			return time.Since(begun), err
		})
		if err != nil {
			return nil, 0, err
		}
		all, walls = append(all, times...), append(walls, wall)
	}
	return all, percentile(walls, 50), nil
}

// floorRounds is how many batches apiFloor times.
const floorRounds = 3

// configMapWrites is a floor request of Kubernetes' cheapest kind, which no agent watches: a ConfigMap's
// create and writes PATCHes of it. The ConfigMaps are labelled name; done deletes them.
func (e *env) configMapWrites(ns, name string, writes int) (request floorRequest, done func()) {
	mark := client.MatchingLabels{"dockside.dev/bench": name}
	request = func(ctx context.Context, round, i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d-%d", name, round, i), Labels: mark}}
		if err := e.k8s.Create(ctx, cm); err != nil {
			return err
		}
		for w := range writes {
			if err := e.k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"data":{"write":"%d"}}`, w))); err != nil {
				return err
			}
		}
		return nil
	}
	return request, func() { _ = e.k8s.DeleteAllOf(context.Background(), &corev1.ConfigMap{}, client.InNamespace(ns), mark) }
}

// configMapPatches is the floor of one object write each: a PATCH of one of n ConfigMaps made beforehand,
// the API server's least work for a write, which no agent watches. It is the reference for claims at once
// (issue 44): a claim bound in one write cannot be Ready sooner than that write. done deletes them.
func (e *env) configMapPatches(ctx context.Context, ns, name string, n int) (request floorRequest, done func(), err error) {
	mark := client.MatchingLabels{"dockside.dev/bench": name}
	done = func() { _ = e.k8s.DeleteAllOf(context.Background(), &corev1.ConfigMap{}, client.InNamespace(ns), mark) }
	cms := make([]*corev1.ConfigMap, n)
	for i := range cms {
		cms[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i), Labels: mark}}
		if err := e.k8s.Create(ctx, cms[i]); err != nil {
			done()
			return nil, nil, err
		}
	}
	request = func(ctx context.Context, round, i int) error {
		return e.k8s.Patch(ctx, cms[i], client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"data":{"write":"%d"}}`, round)))
	}
	return request, done, nil
}

// floorGroup is the API group of the copy of the SandboxClaim kind that claimWrites installs.
const floorGroup = "floor.bench.dockside.dev"

// claimWrites is the floor request of a claim of this API: the create of a SandboxClaim as claimOf makes it
// and one status PATCH that makes it Ready as a warm claim's binding does, the least any claim asks. The
// kind is a copy of SandboxClaim's CRD (schema, CEL rules, status subresource) in a group of its own, so that
// no agent acts on it. done deletes the copy and, with it, its objects.
func (e *env) claimWrites(ctx context.Context, ns string) (request floorRequest, done func(), err error) {
	crd, err := e.claimKindCopy(ctx)
	if err != nil {
		return nil, nil, err
	}
	done = func() { _ = e.k8s.Delete(context.Background(), crd) }
	request = func(ctx context.Context, round, i int) error {
		claim := claimOf(ns, fmt.Sprintf("claim-floor-%d-%d", round+1, i), "warm")
		obj, err := asFloorClaim(claim)
		if err != nil {
			return err
		}
		if err := e.k8s.Create(ctx, obj); err != nil {
			return err
		}
		claim.Generation = obj.GetGeneration() // the conditions' observedGeneration, as the agent writes them
		claim.Status = dsv1alpha1.SandboxClaimStatus{ObservedGeneration: claim.Generation, SandboxName: "warm-" + claim.Name, Start: dsv1alpha1.ClaimWarm}
		status.Summarize(claim, status.Summary{Ready: true, Reason: dsv1alpha1.ReasonClaimed, Message: fmt.Sprintf("Sandbox %s is Ready", claim.Status.SandboxName)})
		patch, err := json.Marshal(map[string]any{"status": claim.Status})
		if err != nil {
			return err
		}
		return e.k8s.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	}
	// The first objects of a new kind wait for the client's discovery of it and the API server's first use of
	// its schema: seconds, which no claim of the installed kind pays.
	if err := request(ctx, -1, 0); err != nil {
		done()
		return nil, nil, fmt.Errorf("a first claim of the floor's kind: %w", err)
	}
	return request, done, nil
}

// claimKindCopy installs SandboxClaim's CRD again in floorGroup and waits until it serves.
func (e *env) claimKindCopy(ctx context.Context) (*apiextensionsv1.CustomResourceDefinition, error) {
	orig := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.k8s.Get(ctx, client.ObjectKey{Name: "sandboxclaims." + dsv1alpha1.GroupVersion.Group}, orig); err != nil {
		return nil, fmt.Errorf("reading SandboxClaim's CRD: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: orig.Spec.Names.Plural + "." + floorGroup}, Spec: orig.Spec}
	crd.Spec.Group = floorGroup
	if err := e.k8s.Create(ctx, crd); err != nil {
		return nil, fmt.Errorf("installing the floor's copy of SandboxClaim's CRD: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		_ = e.k8s.Delete(context.Background(), crd)
		return nil, fmt.Errorf("waiting for the floor's copy of SandboxClaim's CRD: %w", err)
	}
	return crd, nil
}

// asFloorClaim is claim as an object of the floor's copy of the kind.
func asFloorClaim(claim *dsv1alpha1.SandboxClaim) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(claim)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetAPIVersion(floorGroup + "/" + dsv1alpha1.GroupVersion.Version)
	obj.SetKind("SandboxClaim")
	unstructured.RemoveNestedField(obj.Object, "status")
	return obj, nil
}
