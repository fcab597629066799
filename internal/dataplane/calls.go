package dataplane

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// sandboxGone is why the agent ended a call: the Sandbox it was made to was deleted, or rebuilt on new
// containers (docs/design/dataplane.md, "Calls end with their Sandbox").
type sandboxGone struct {
	sandbox string
	what    string // "was deleted", "was rebuilt (...)"
}

func (e *sandboxGone) Error() string { return fmt.Sprintf("sandbox %q %s", e.sandbox, e.what) }

func deleted(sandbox string) *sandboxGone { return &sandboxGone{sandbox, "was deleted"} }

// identity is the Sandbox a call was made to, as it was when the call began.
type identity struct {
	namespace  string
	sandbox    string
	uid        types.UID
	generation int64  // status.topologyGeneration: the generation of the containers the call reaches
	service    string // the SandboxService whose container the call reaches; "" the primary
	container  string // the status's Docker ID of that container, "" when none was recorded yet
}

func identityOf(sbx *dsv1alpha1.Sandbox, service string) identity {
	return identity{namespace: sbx.Namespace, sandbox: sbx.Name, uid: sbx.UID, generation: sbx.Status.TopologyGeneration, service: service,
		container: containerIDOf(sbx, service)}
}

// containerIDOf is the Docker ID the Sandbox's status records for the primary, or for its instance of service.
func containerIDOf(sbx *dsv1alpha1.Sandbox, service string) string {
	if service == "" {
		return sbx.Status.ContainerID
	}
	for _, st := range sbx.Status.Services {
		if st.Name == service {
			return st.ContainerID
		}
	}
	return ""
}

// judge says how sbx, the same Sandbox as now seen, is no longer what the call was made to, nil while it is.
// Only a later topology generation counts as a rebuild: a read older than the call's (the cache a moment
// behind the API server the call was looked up from) says nothing. Containers are never replaced within one
// generation (a failed one rolls the topology), so a new container ID there is a rebuild too.
func (id identity) judge(sbx *dsv1alpha1.Sandbox) *sandboxGone {
	switch {
	case sbx.UID != id.uid || sbx.DeletionTimestamp != nil:
		return deleted(id.sandbox)
	case sbx.Status.TopologyGeneration > id.generation && id.generation > 0:
		return &sandboxGone{id.sandbox, fmt.Sprintf("was rebuilt (topology generation %d replaced %d)", sbx.Status.TopologyGeneration, id.generation)}
	case sbx.Status.TopologyGeneration != id.generation:
		return nil
	}
	if now := containerIDOf(sbx, id.service); now != "" && id.container != "" && now != id.container {
		return &sandboxGone{id.sandbox, "was rebuilt (its container was replaced)"}
	}
	return nil
}

// call is one open call into a Sandbox of this node: an exec, a files or processes request, a port-forward
// session.
type call struct {
	id  identity
	end context.CancelCauseFunc
}

// tombstoneTTL is how long a deleted Sandbox's UID is remembered, so that a call looked up before its deletion
// and entered after the event is ended too. A call enters within moments of its lookup.
const tombstoneTTL = 5 * time.Minute

// callRegistry holds the open calls into this node's Sandboxes by UID, and ends them when the agent's watch of
// its Sandboxes shows theirs deleted or rebuilt.
type callRegistry struct {
	mu      sync.Mutex
	open    map[types.UID]map[*call]struct{}
	deleted map[types.UID]time.Time // when each recently deleted Sandbox was seen gone
}

func newCallRegistry() *callRegistry {
	return &callRegistry{open: map[types.UID]map[*call]struct{}{}, deleted: map[types.UID]time.Time{}}
}

// enter registers a call to id; its context ends, with a *sandboxGone cause, when the Sandbox does. The
// caller must leave it.
func (c *callRegistry) enter(ctx context.Context, id identity) (context.Context, *call) {
	ctx, end := context.WithCancelCause(ctx)
	cl := &call{id: id, end: end}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, gone := c.deleted[id.uid]; gone {
		end(deleted(id.sandbox))
		return ctx, cl
	}
	if c.open[id.uid] == nil {
		c.open[id.uid] = map[*call]struct{}{}
	}
	c.open[id.uid][cl] = struct{}{}
	return ctx, cl
}

// leave forgets the call and releases its context.
func (c *callRegistry) leave(cl *call) {
	c.mu.Lock()
	delete(c.open[cl.id.uid], cl)
	if len(c.open[cl.id.uid]) == 0 {
		delete(c.open, cl.id.uid)
	}
	c.mu.Unlock()
	cl.end(context.Canceled)
}

// seen judges the calls to sbx's UID against sbx as it is now, and ends those it no longer is.
func (c *callRegistry) seen(sbx *dsv1alpha1.Sandbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for cl := range c.open[sbx.UID] {
		if why := cl.id.judge(sbx); why != nil {
			cl.end(why)
		}
	}
}

// gone ends every call to sbx's UID: the Sandbox was deleted.
func (c *callRegistry) gone(sbx *dsv1alpha1.Sandbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for uid, at := range c.deleted {
		if now.Sub(at) > tombstoneTTL {
			delete(c.deleted, uid)
		}
	}
	c.deleted[sbx.UID] = now
	for cl := range c.open[sbx.UID] {
		cl.end(deleted(sbx.Name))
	}
}
