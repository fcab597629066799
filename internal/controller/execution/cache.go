package execution

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/cachetrim"
)

// CacheTransform trims an Execution before it enters the agent's cache (the cache's Transform). Executions
// carry no node, so every agent caches every Execution in the cluster, and whatever it keeps of one is paid
// for by every agent for every Execution of every namespace. It keeps what places an Execution in its
// Sandbox's queue and says where it stands, all of it bounded by validation or written only by agents: name,
// UID, resourceVersion, generation, creation and deletion times, the Sandbox ownerReference, sandboxName,
// timeoutSeconds, maxOutputBytes, ttlSecondsAfterFinished and the status without its output (cachetrim.Meta
// for the metadata). It drops the command, stdin, env, workingDir, finalizers, stdout and stderr, which a client
// can fill up to the API server's object size limit (about 1.5 MiB). What needs them reads the Execution from
// the API server (fullRead).
func CacheTransform(obj any) (any, error) {
	if ex, ok := obj.(*dsv1alpha1.Execution); ok {
		return trimmed(ex), nil
	}
	return obj, nil
}

// trimmed is the cache's copy of an Execution (see CacheTransform).
func trimmed(ex *dsv1alpha1.Execution) *dsv1alpha1.Execution {
	out := &dsv1alpha1.Execution{
		TypeMeta: ex.TypeMeta,
		// Only the Sandbox ownerReference is read; a client may add any number of others. The finalizers are
		// no agent's: none is written from this copy.
		ObjectMeta: cachetrim.Meta(&ex.ObjectMeta, isSandboxRef),
		Spec: dsv1alpha1.ExecutionSpec{
			SandboxName: ex.Spec.SandboxName, TimeoutSeconds: ex.Spec.TimeoutSeconds,
			MaxOutputBytes: ex.Spec.MaxOutputBytes, TTLSecondsAfterFinished: ex.Spec.TTLSecondsAfterFinished,
		},
		Status: ex.Status,
	}
	out.Finalizers = nil
	out.Status.Stdout, out.Status.Stderr = "", ""
	return out
}

// fullRead reads the whole Execution from the API server, past the cache that holds it trimmed: nil when it
// is gone or replaced by another of the same name. Its spec cannot change, so any read of the same UID has
// the spec the Execution was created with.
func (r *Reconciler) fullRead(ctx context.Context, ex *dsv1alpha1.Execution) (*dsv1alpha1.Execution, error) {
	full := &dsv1alpha1.Execution{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ex), full); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if full.UID != ex.UID {
		return nil, nil
	}
	return full, nil
}

// errReplaced stands for an Execution that is gone or was replaced while a pass worked on it: the events of
// the new one bring its own passes.
var errReplaced = apierrors.NewNotFound(dsv1alpha1.GroupVersion.WithResource("executions").GroupResource(), "")
