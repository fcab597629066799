package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/controller/nodelifecycle"
	"github.com/dockside-dev/dockside/internal/runtimes"
)

// nodeRuntimes asks the daemon, once, which OCI runtimes it offers, and refuses a --default-runtime it cannot
// run (docs/deploy.md, "Running Sandboxes under gVisor").
func nodeRuntimes(ctx context.Context, driver dd.Driver, opts Options, log logr.Logger) (runtimes.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.DockerTimeout)
	defer cancel()
	listed, err := driver.Runtimes(ctx)
	if err != nil {
		return runtimes.Node{}, fmt.Errorf("asking the Docker daemon for its runtimes: %w", err)
	}
	node, err := runtimes.Discover(listed, opts.GVisorRuntimeName, opts.DefaultRuntime)
	if err != nil {
		return runtimes.Node{}, fmt.Errorf("--default-runtime: %w", err)
	}
	log.Info("Runtimes this node offers Sandboxes", "offered", node.AnnotationValue(), "default", node.Default, "dockerRuntimes", strings.Join(listed, ","))
	return node, nil
}

// runtimesAdvert publishes the node's runtimes on its Lease (runtimes.Annotation) once the agent holds the
// Lease, retrying until it is written: the agents of other nodes read it to know whether anyone can run a
// Sandbox's runtime. The merge patch touches the annotation alone, which the leader election's updates keep.
type runtimesAdvert struct {
	client           client.Client
	namespace, lease string
	value            string
	log              logr.Logger
}

// NeedLeaderElection: only the holder of the Lease writes on it.
func (a *runtimesAdvert) NeedLeaderElection() bool { return true }

func (a *runtimesAdvert) Start(ctx context.Context) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: a.lease}}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, runtimes.Annotation, a.value))
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 30 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := a.client.Patch(ctx, lease, patch); err != nil {
			a.log.Info("Publishing the node's runtimes on its Lease failed; retrying", "error", err.Error())
			return false, nil
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("publishing the node's runtimes on Lease %s/%s: %w", a.namespace, a.lease, err)
	}
	<-ctx.Done()
	return nil
}

// offeredElsewhere reads the Leases of the other nodes' agents (the manager's cache holds them with leader
// election) for one renewed within lostAfter whose runtimes annotation lists rt.
func offeredElsewhere(reader client.Reader, namespace, self string, lostAfter time.Duration) func(context.Context, dsv1alpha1.Runtime) (bool, error) {
	return func(ctx context.Context, rt dsv1alpha1.Runtime) (bool, error) {
		var leases coordinationv1.LeaseList
		if err := reader.List(ctx, &leases, client.InNamespace(namespace)); err != nil {
			return false, fmt.Errorf("listing the agents' Leases for their runtimes: %w", err)
		}
		for i := range leases.Items {
			l := &leases.Items[i]
			node, ok := strings.CutPrefix(l.Name, nodelifecycle.LeasePrefix)
			if !ok || node == self || l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) > lostAfter {
				continue
			}
			if runtimes.Listed(l.Annotations[runtimes.Annotation], rt) {
				return true, nil
			}
		}
		return false, nil
	}
}
