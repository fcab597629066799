package egress

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// RefusalEvents tells a Sandbox that its egress was refused, in at most one Event per Sandbox per period,
// which counts the refusals it stands for: a program retrying in a loop must not flood the API server.
type RefusalEvents struct {
	reader   client.Reader
	recorder events.EventRecorder
	every    time.Duration

	mu      sync.Mutex
	last    map[types.NamespacedName]time.Time
	pending map[types.NamespacedName]int
}

func (e *RefusalEvents) Record(src Source, known bool, dest string, r *Refusal) {
	if !known {
		return // not a Sandbox's: nothing to tell it; the proxy's metric counts it
	}
	key := types.NamespacedName{Namespace: src.Namespace, Name: src.Name}
	e.mu.Lock()
	if e.pending == nil {
		e.pending = map[types.NamespacedName]int{}
	}
	e.pending[key]++
	if time.Since(e.last[key]) < e.every {
		e.mu.Unlock()
		return
	}
	n := e.pending[key]
	e.last[key], e.pending[key] = time.Now(), 0
	e.mu.Unlock()

	sbx := &dsv1alpha1.Sandbox{}
	if err := e.reader.Get(context.Background(), key, sbx); err != nil {
		return
	}
	e.recorder.Eventf(sbx, nil, "Warning", "EgressRefused", "Connect",
		"egress to %s refused (%s): %s; %d refusal(s) since the last such Event", dest, r.Reason, r.Message, n)
}

// NewRefusalEvents records refusals as Events on their Sandboxes (read through reader), at most one per
// Sandbox every period. Its Record is a Proxy's OnRefused.
func NewRefusalEvents(reader client.Reader, recorder events.EventRecorder, every time.Duration) *RefusalEvents {
	return &RefusalEvents{reader: reader, recorder: recorder, every: every, last: map[types.NamespacedName]time.Time{}}
}
