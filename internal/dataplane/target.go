package dataplane

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// resourcePrefix starts every path the API serves on a Sandbox.
const resourcePrefix = "/apis/" + Group + "/" + Version + "/namespaces/"

// target is what a request's path names: /apis/<group>/<version>/namespaces/<ns>/sandboxes/<name>/<sub>[/rest].
type target struct {
	Namespace, Name, Subresource string
	Rest                         string // what follows the subresource, with its leading "/", or ""
}

// parseTarget reads the path; ok is false for any other path.
func parseTarget(path string) (target, bool) {
	rest, ok := strings.CutPrefix(path, resourcePrefix)
	if !ok {
		return target{}, false
	}
	parts := strings.SplitN(rest, "/", 5)
	if len(parts) < 4 || parts[1] != "sandboxes" || parts[0] == "" || parts[2] == "" {
		return target{}, false
	}
	t := target{Namespace: parts[0], Name: parts[2], Subresource: parts[3]}
	if len(parts) == 5 {
		t.Rest = "/" + parts[4]
	}
	return t, true
}

// refusal is an answer given instead of serving: an HTTP code, a Status reason and a message.
type refusal struct {
	code    int
	reason  metav1.StatusReason
	message string
}

func (r *refusal) write(w http.ResponseWriter) { writeStatus(w, r.code, r.reason, "%s", r.message) }

// lookup reads the Sandbox from the agent's cache when it is one of node's (an agent caches only its own
// node's), else from the API server: most calls land on the Sandbox's own agent, and the cache saves each a
// round trip. A cached Sandbox may be a moment behind: one paused since is refused by Docker, not here.
func lookup(ctx context.Context, cached, r client.Reader, node string, t target) (*dsv1alpha1.Sandbox, *refusal, error) {
	var sbx dsv1alpha1.Sandbox
	key := client.ObjectKey{Namespace: t.Namespace, Name: t.Name}
	if cached != nil && cached.Get(ctx, key, &sbx) == nil && nodeOf(&sbx) == node {
		return &sbx, nil, nil
	}
	switch err := r.Get(ctx, key, &sbx); {
	case apierrors.IsNotFound(err):
		return nil, &refusal{http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("sandboxes.dockside.dev %q not found", t.Name)}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("reading Sandbox %s/%s: %w", t.Namespace, t.Name, err)
	}
	return &sbx, nil, nil
}

// nodeOf is the node that runs the Sandbox, "" while it is unbound.
func nodeOf(sbx *dsv1alpha1.Sandbox) string {
	if sbx.Status.NodeName != "" {
		return sbx.Status.NodeName
	}
	return sbx.Spec.NodeName
}

// runnable is the rule for calls into a Sandbox (docs/design/dataplane.md, "Paused Sandboxes and captures"): a
// Paused Sandbox, or one asked to pause, is refused at once with 409 naming the state, since it stays so until
// someone resumes it; so is any other phase than Running. woken says the call thawed the Sandbox from an idle
// pause (Server.wake): it runs, though its status says Paused until the Sandbox reconciler's next pass. A
// Sandbox a Checkpoint capture holds frozen is waited for (see Server.awaitRunnable), as Executions wait.
func runnable(sbx *dsv1alpha1.Sandbox, woken bool) *refusal {
	conflict := func(format string, args ...any) *refusal {
		return &refusal{http.StatusConflict, metav1.StatusReasonConflict, fmt.Sprintf(format, args...)}
	}
	switch {
	case sbx.DeletionTimestamp != nil:
		return conflict("Sandbox %q is being deleted", sbx.Name)
	case woken:
		return nil
	case sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused || sbx.Status.Phase == dsv1alpha1.SandboxPaused:
		return conflict("Sandbox %q is Paused: resume it first (kubectl dockside resume %s)", sbx.Name, sbx.Name)
	case sbx.Status.Phase != dsv1alpha1.SandboxRunning:
		phase := sbx.Status.Phase
		if phase == "" {
			phase = dsv1alpha1.SandboxPending
		}
		return conflict("Sandbox %q is %s, not Running", sbx.Name, phase)
	}
	return nil
}

// captureWaitPoll is how often a request waiting for a capture looks again.
const captureWaitPoll = 200 * time.Millisecond
