package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// claimRounds is how many claims each claim series makes, one at a time and then all at once.
const claimRounds = 20

// BenchmarkClaim times a SandboxClaim from its create to Ready as a watch delivers it, taking a warm Sandbox
// of a full pool, against a claim of the same template from an empty pool, which gets a cold start: one at
// a time, in turns, and then all at once.
func BenchmarkClaim(b *testing.B) {
	e, ns := benchNamespace(b, "claim")
	ctx := context.Background()
	tpl := &dsv1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "busybox"},
		Spec: dsv1alpha1.SandboxTemplateSpec{Sandbox: session(ns, "").Spec}}
	warm, empty := warmPool(ns, "warm", tpl.Name, 1), warmPool(ns, "empty", tpl.Name, 0)
	for _, obj := range []client.Object{tpl, warm, empty} {
		if err := e.k8s.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}

	// One at a time, warm and cold in turns; each round starts with the pool full and the machine quiet
	// (the claimed Sandboxes deleted, the pool refilled), so that no refill or deletion runs during a claim.
	var warmTimes, coldTimes []time.Duration
	var seqPath claimPath
	for i := range claimRounds {
		if err := e.waitPoolFull(ctx, warm); err != nil {
			b.Fatal(err)
		}
		before, err := e.pathMark(ctx)
		if err != nil {
			b.Fatal(err)
		}
		w, err := e.claimAndWait(ctx, claimOf(ns, fmt.Sprintf("warm-%d", i), warm.Name), dsv1alpha1.ClaimWarm)
		if err != nil {
			b.Fatal(err)
		}
		after, err := e.pathMark(ctx)
		if err != nil {
			b.Fatal(err)
		}
		seqPath.add(before, after, 1)
		c, err := e.claimAndWait(ctx, claimOf(ns, fmt.Sprintf("cold-%d", i), empty.Name), dsv1alpha1.ClaimCold)
		if err != nil {
			b.Fatal(err)
		}
		warmTimes, coldTimes = append(warmTimes, w), append(coldTimes, c)
		if err := e.deleteClaims(ctx, ns); err != nil {
			b.Fatal(err)
		}
	}
	record(b, group{
		Key: "claim-seq", Title: fmt.Sprintf("SandboxClaim of a warm session Sandbox, %d one at a time", claimRounds),
		Baseline: "a claim of the same template from an empty pool: a cold start",
		Figures:  startupFigures(warmTimes, coldTimes, "≤ 30 ms"),
	})
	record(b, group{Key: "claim-seq-path", Title: "Where a warm claim's time goes, one at a time, from just before its create to just after its Ready",
		Figures: seqPath.figures()})

	// All at once: a pool of as many as the claims, full. On the machine as quiet as the claims find it, the
	// API server's floors first: measured after the claims, they would run beside the pool's refills.
	if err := e.resizePool(ctx, warm, claimRounds); err != nil {
		b.Fatal(err)
	}
	before, err := e.pathMark(ctx)
	if err != nil {
		b.Fatal(err)
	}
	twoWrites, done := e.configMapWrites(ns, "api-floor", 2)
	defer done()
	floorTimes, floorWall, err := apiFloor(ctx, claimRounds, twoWrites)
	if err != nil {
		b.Fatal(err)
	}
	after, err := e.pathMark(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var floorPath claimPath
	floorPath.add(before, after, floorRounds*claimRounds)
	oneWriteFloor, done := e.configMapWrites(ns, "one-write-floor", 1)
	defer done()
	oneWrite, _, err := apiFloor(ctx, claimRounds, oneWriteFloor)
	if err != nil {
		b.Fatal(err)
	}
	patchFloor, done, err := e.configMapPatches(ctx, ns, "write-floor", claimRounds)
	if err != nil {
		b.Fatal(err)
	}
	defer done()
	writeFloor, writeFloorWall, err := apiFloor(ctx, claimRounds, patchFloor)
	if err != nil {
		b.Fatal(err)
	}
	claimFloor, done, err := e.claimWrites(ctx, ns)
	if err != nil {
		b.Fatal(err)
	}
	defer done()
	if before, err = e.pathMark(ctx); err != nil {
		b.Fatal(err)
	}
	claimKind, _, err := apiFloor(ctx, claimRounds, claimFloor)
	if err != nil {
		b.Fatal(err)
	}
	if after, err = e.pathMark(ctx); err != nil {
		b.Fatal(err)
	}
	var claimKindPath claimPath
	claimKindPath.add(before, after, floorRounds*claimRounds)
	if before, err = e.pathMark(ctx); err != nil {
		b.Fatal(err)
	}
	warmTimes, warmWall, err := timeAll(claimRounds, func(i int) (time.Duration, error) {
		return e.claimAndWait(ctx, claimOf(ns, fmt.Sprintf("warm-par-%d", i), warm.Name), dsv1alpha1.ClaimWarm)
	})
	if err != nil {
		b.Fatal(err)
	}
	if after, err = e.pathMark(ctx); err != nil {
		b.Fatal(err)
	}
	var parPath claimPath
	parPath.add(before, after, claimRounds)
	// Then the same number of cold ones, with the warm pool emptied first so that its refills do not run
	// beside them.
	if err := e.resizePool(ctx, warm, 0); err != nil {
		b.Fatal(err)
	}
	if err := e.deleteClaims(ctx, ns); err != nil {
		b.Fatal(err)
	}
	coldTimes, coldWall, err := timeAll(claimRounds, func(i int) (time.Duration, error) {
		return e.claimAndWait(ctx, claimOf(ns, fmt.Sprintf("cold-par-%d", i), empty.Name), dsv1alpha1.ClaimCold)
	})
	if err != nil {
		b.Fatal(err)
	}
	record(b, group{
		Key: "claim-par", Title: fmt.Sprintf("SandboxClaim of a warm session Sandbox, %d at once from a pool of %d", claimRounds, claimRounds),
		Baseline: "as many claims at once from an empty pool: cold starts",
		Figures: append(startupFigures(warmTimes, coldTimes, ""),
			figure{Name: "all Ready", Unit: "s", Dockside: seconds(warmWall), Baseline: seconds(coldWall)}),
	})
	record(b, group{Key: "claim-par-path", Title: fmt.Sprintf("Where warm claims' time goes, %d at once, from just before their creates to just after the last Ready", claimRounds),
		Figures: parPath.figures()})
	record(b, group{
		Key: "claim-par-floor", Title: fmt.Sprintf("The same %d warm claims at once against the API server's floor for their writes", claimRounds),
		Baseline: "as many at once of a ConfigMap create and two PATCHes of it, with no agent and no watch: a claim's create, binding and status",
		Figures: append(startupFigures(warmTimes, floorTimes, ""),
			figure{Name: "all done", Unit: "s", Dockside: seconds(warmWall), Baseline: seconds(floorWall)},
			figure{Name: "kube-apiserver's CPU per claim", Unit: "ms", Dockside: parPath.apiCPUPerClaim(),
				Baseline: floorPath.apiCPUPerClaim()}),
	})
	record(b, group{
		Key: "claim-par-write-floor", Title: fmt.Sprintf("The same %d warm claims at once against the API server's floor for one object write each", claimRounds),
		Baseline: "as many PATCHes at once, one each of as many ConfigMaps made beforehand, with no agent and no watch (the median of 3 batches)",
		Figures: append(startupFigures(warmTimes, writeFloor, ""),
			figure{Name: "all done", Unit: "s", Dockside: seconds(warmWall), Baseline: seconds(writeFloorWall), Goal: "≤ 2x the floor"}),
	})
	record(b, group{
		Key: "claim-par-one-write", Title: fmt.Sprintf("The same %d warm claims at once against the floor of a claim that is one write after its create", claimRounds),
		Baseline: "as many at once of a ConfigMap create and one PATCH of it: the least a claim bound by its own status write asks",
		Figures:  startupFigures(warmTimes, oneWrite, ""),
	})
	record(b, group{
		Key: "claim-par-claim-floor", Title: fmt.Sprintf("The same %d warm claims at once against the floor of a claim of this API", claimRounds),
		Baseline: "as many at once of a SandboxClaim create and one status PATCH making it Ready, in a copy of its CRD that no agent watches: the least any claim asks",
		Figures: append(startupFigures(warmTimes, claimKind, ""),
			figure{Name: "kube-apiserver's CPU per claim", Unit: "ms", Dockside: parPath.apiCPUPerClaim(),
				Baseline: claimKindPath.apiCPUPerClaim()}),
	})
}

// warmPool is a pool of replicas Sandboxes of template tpl.
func warmPool(ns, name, tpl string, replicas int32) *dsv1alpha1.SandboxWarmPool {
	return &dsv1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: dsv1alpha1.SandboxWarmPoolSpec{TemplateRef: dsv1alpha1.LocalObjectReference{Name: tpl}, Replicas: replicas}}
}

// claimOf is a claim of pool that sets what a task would: its env.
func claimOf(ns, name, pool string) *dsv1alpha1.SandboxClaim {
	return &dsv1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: dsv1alpha1.SandboxClaimSpec{PoolRef: dsv1alpha1.LocalObjectReference{Name: pool},
			Env: []dsv1alpha1.ExecutionEnvVar{{Name: "TASK", Value: name}}}}
}

// claimAndWait creates claim and waits until a watch sees it Ready; it returns how long that took, and fails
// when the claim started otherwise than start says (a warm figure of a cold start would be a lie).
func (e *env) claimAndWait(ctx context.Context, claim *dsv1alpha1.SandboxClaim, start dsv1alpha1.ClaimStart) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	begun := time.Now()
	if err := e.k8s.Create(ctx, claim); err != nil {
		return 0, err
	}
	at, err := e.claims.waitReady(ctx, client.ObjectKeyFromObject(claim))
	if err != nil {
		return 0, fmt.Errorf("%w\n%s", err, e.agent.LogTail())
	}
	if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
		return 0, err
	}
	if claim.Status.Start != start {
		return 0, fmt.Errorf("SandboxClaim %s got a %s start (Sandbox %s), not %s", claim.Name, claim.Status.Start, claim.Status.SandboxName, start)
	}
	return at.Sub(begun), nil
}

// waitPoolFull waits until the agent reports the pool's spec acted on and every replica warm and Ready: 20
// cold starts at once took more than 3 minutes at a load average of 49.
func (e *env) waitPoolFull(ctx context.Context, pool *dsv1alpha1.SandboxWarmPool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for {
		if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return fmt.Errorf("reading SandboxWarmPool %s: %w", pool.Name, err)
		}
		st := &pool.Status
		if st.ObservedGeneration == pool.Generation && st.Replicas == pool.Spec.Replicas && st.AvailableReplicas == pool.Spec.Replicas {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("SandboxWarmPool %s not full (%d of %d available): %w\n%s", pool.Name,
				st.AvailableReplicas, pool.Spec.Replicas, ctx.Err(), e.agent.LogTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// resizePool sets the pool's replicas and waits until it has them, and no other member is left.
func (e *env) resizePool(ctx context.Context, pool *dsv1alpha1.SandboxWarmPool, replicas int32) error {
	patch := client.MergeFrom(pool.DeepCopy())
	pool.Spec.Replicas = replicas
	if err := e.k8s.Patch(ctx, pool, patch); err != nil {
		return err
	}
	if err := e.waitPoolFull(ctx, pool); err != nil {
		return err
	}
	return e.waitEmptyList(ctx, pool.Namespace, func(sbx *dsv1alpha1.Sandbox) bool {
		return sbx.Labels[dsv1alpha1.LabelPool] == pool.Name && sbx.Labels[dsv1alpha1.LabelClaim] == "" &&
			!sbx.DeletionTimestamp.IsZero()
	})
}

// deleteClaims deletes every claim of ns and waits until the agent has deleted their Sandboxes.
func (e *env) deleteClaims(ctx context.Context, ns string) error {
	if err := e.k8s.DeleteAllOf(ctx, &dsv1alpha1.SandboxClaim{}, client.InNamespace(ns)); err != nil {
		return err
	}
	return e.waitEmptyList(ctx, ns, func(sbx *dsv1alpha1.Sandbox) bool { return sbx.Labels[dsv1alpha1.LabelClaim] != "" })
}

// waitEmptyList waits up to 3 minutes until no Sandbox of ns matches.
func (e *env) waitEmptyList(ctx context.Context, ns string, matches func(*dsv1alpha1.Sandbox) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		var list dsv1alpha1.SandboxList
		if err := e.k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		left := 0
		for i := range list.Items {
			if matches(&list.Items[i]) {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d Sandbox(es) of %s left: %w\n%s", left, ns, ctx.Err(), e.agent.LogTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
