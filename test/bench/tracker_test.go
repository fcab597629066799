package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// tracker notes when each object of one kind (Sandboxes, SandboxClaims) first reads Ready (or Stalled) as
// the API server's watch delivers it, so that benchmarks time apply → Ready to the moment a watching client
// (kubectl wait, Flux) would see it, without polling the API server they measure; and whether a Sandbox was
// ever seen with its topology poisoned.
type tracker struct {
	kind string
	mu   sync.Mutex
	seen map[types.NamespacedName]*progress
}

// conditioned is an object of a kind whose status has conditions.
type conditioned interface {
	client.Object
	StatusConditions() *[]metav1.Condition
}

type progress struct {
	done    chan struct{} // closed at the first Ready=True or Stalled=True
	gone    chan struct{} // closed when the watch delivers its deletion
	readyAt time.Time
	stalled string // reason and message when it stalled instead
	// poisoned is the reason and message of the first TopologyPoisoned=True seen (Sandboxes), whenever it
	// was, and poisonedAt when.
	poisoned   string
	poisonedAt time.Time
}

// newTracker watches every object of obj's kind, named kind in errors.
func newTracker(ctx context.Context, cfg *rest.Config, kind string, obj conditioned) (*tracker, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	t := &tracker{kind: kind, seen: map[types.NamespacedName]*progress{}}
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj, time.Now()) },
		UpdateFunc: func(_, obj any) { t.observe(obj, time.Now()) },
		DeleteFunc: t.observeDeletion,
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the %s watch never synced", t.kind)
	}
	return t, nil
}

func (t *tracker) entry(key types.NamespacedName) *progress {
	p, ok := t.seen[key]
	if !ok {
		p = &progress{done: make(chan struct{}), gone: make(chan struct{})}
		t.seen[key] = p
	}
	return p
}

func (t *tracker) observe(obj any, at time.Time) {
	o, ok := obj.(conditioned)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.entry(client.ObjectKeyFromObject(o))
	conds := *o.StatusConditions()
	if c := meta.FindStatusCondition(conds, dsv1alpha1.ConditionTopologyPoisoned); c != nil && c.Status == metav1.ConditionTrue && p.poisoned == "" {
		p.poisoned, p.poisonedAt = c.Reason+": "+c.Message, at
	}
	select {
	case <-p.done:
		return
	default:
	}
	if meta.IsStatusConditionTrue(conds, dsv1alpha1.ConditionReady) {
		p.readyAt = at
		close(p.done)
	} else if c := meta.FindStatusCondition(conds, dsv1alpha1.ConditionStalled); c != nil && c.Status == "True" {
		p.stalled = c.Reason + ": " + c.Message
		close(p.done)
	}
}

// observeDeletion notes that an object is gone from the API server, its finalizers released.
func (t *tracker) observeDeletion(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.entry(client.ObjectKeyFromObject(o))
	select {
	case <-p.gone:
	default:
		close(p.gone)
	}
}

// waitGone returns when key's deletion was seen, or an error when ctx ended first.
func (t *tracker) waitGone(ctx context.Context, key types.NamespacedName) error {
	t.mu.Lock()
	p := t.entry(key)
	t.mu.Unlock()
	select {
	case <-p.gone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s not gone: %w", t.kind, key, ctx.Err())
	}
}

// waitReady returns when key was first seen Ready, or an error when it stalled or ctx ended first.
func (t *tracker) waitReady(ctx context.Context, key types.NamespacedName) (time.Time, error) {
	t.mu.Lock()
	p := t.entry(key)
	t.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		select {
		case <-p.done: // it got there at the same moment
		default:
			return time.Time{}, fmt.Errorf("%s %s not Ready: %w", t.kind, key, ctx.Err())
		}
	}
	if p.stalled != "" {
		return time.Time{}, fmt.Errorf("%s %s stalled: %s", t.kind, key, p.stalled)
	}
	return p.readyAt, nil
}

// readyAt is when key was first seen Ready, if it was.
func (t *tracker) readyAt(key types.NamespacedName) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.seen[key]; ok && !p.readyAt.IsZero() {
		return p.readyAt, true
	}
	return time.Time{}, false
}

// poisoning is the reason and message of key's first TopologyPoisoned=True as the watch delivered it, and
// when, or "". A watch that broke misses only what an object was between two of its states; a poisoning lasts.
func (t *tracker) poisoning(key types.NamespacedName) (string, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.seen[key]; ok {
		return p.poisoned, p.poisonedAt
	}
	return "", time.Time{}
}
