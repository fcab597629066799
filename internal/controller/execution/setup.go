package execution

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// SetupWithManager wires the reconciler: Executions (with when each arrived, and their Sandbox's queue moving
// on when one ends or goes), this node's Sandboxes (whose queues move when they turn Ready or go, or when a
// capture lets go of them: Freezes). Commands run under ctx; when the manager stops, it waits for the runs
// to record their outcome. The Executions no agent has taken have a controller of their own
// (SetupUntakenWithManager).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	r.base, r.ended, r.freed = ctx, make(chan event.GenericEvent, 64), make(chan event.GenericEvent, 64)
	r.Freezes.Notify(r.notifyFreed)
	err := mgr.GetFieldIndexer().IndexField(ctx, &dsv1alpha1.Execution{}, dsv1alpha1.FieldExecutionSandboxName, func(o client.Object) []string {
		return []string{o.(*dsv1alpha1.Execution).Spec.SandboxName}
	})
	if err != nil {
		return fmt.Errorf("indexing Executions by Sandbox: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.Runs.Wait()
		return nil
	})); err != nil {
		return fmt.Errorf("adding the wait for running Executions: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("execution").
		Watches(&dsv1alpha1.Execution{}, r.executionEvents()).
		Watches(&dsv1alpha1.Sandbox{}, handler.EnqueueRequestsFromMapFunc(r.queueOf)).
		WatchesRawSource(source.Channel(r.ended, r.executionEvents())).
		WatchesRawSource(source.Channel(r.freed, handler.EnqueueRequestsFromMapFunc(r.queueOf))).
		WithOptions(opts).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the Execution controller: %w", err)
	}
	return nil
}

// SetupUntakenWithManager wires the untakenReconciler to the Executions no agent has taken, in a controller
// and queue of its own (the agent gives it one worker): what it does for them is a courtesy that must not
// hold up this node's Executions.
func (r *Reconciler) SetupUntakenWithManager(_ context.Context, mgr ctrl.Manager, opts controller.Options) error {
	untaken := predicate.NewPredicateFuncs(func(o client.Object) bool {
		ex, ok := o.(*dsv1alpha1.Execution)
		return ok && ex.Status.NodeName == ""
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("execution-untaken").
		Watches(&dsv1alpha1.Execution{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(untaken)).
		WithOptions(opts).
		Complete(untakenReconciler{r})
	if err != nil {
		return fmt.Errorf("setting up the controller of untaken Executions: %w", err)
	}
	return nil
}

// executionEvents enqueues each Execution that changes, notes when new ones arrive (their creation order),
// and moves the queue of a Sandbox along when one of its Executions changes phase, goes, or ends its run. A
// phase change or a run's end brings a pass for the first of the queue only: the others wait for the one just
// before them (ahead), which has not changed. One that goes brings a pass for each, as the one after it named
// it.
func (r *Reconciler) executionEvents() handler.Funcs {
	enqueue := func(q queue, o client.Object) {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			r.noteArrival(e.Object.(*dsv1alpha1.Execution))
			enqueue(q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			ex := e.ObjectNew.(*dsv1alpha1.Execution)
			r.noteArrival(ex)
			enqueue(q, ex)
			if e.ObjectOld.(*dsv1alpha1.Execution).Status.Phase != ex.Status.Phase {
				r.enqueueFirst(ctx, q, ex.Namespace, ex.Spec.SandboxName)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			r.arrivals.Delete(e.Object.GetUID())
			enqueue(q, e.Object)
			if ex, ok := e.Object.(*dsv1alpha1.Execution); ok {
				r.enqueueQueue(ctx, q, ex.Namespace, ex.Spec.SandboxName)
			}
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { // a run ended
			ex := e.Object.(*dsv1alpha1.Execution)
			enqueue(q, ex)
			r.enqueueFirst(ctx, q, ex.Namespace, ex.Spec.SandboxName)
		},
	}
}

// notifyFreed brings passes over the queue of a Sandbox that a capture or a command has let go of: its
// Executions waiting SandboxFrozen may start now, and no change of the Sandbox would bring them.
func (r *Reconciler) notifyFreed(key types.NamespacedName) {
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case r.freed <- event.GenericEvent{Object: sbx}:
	case <-r.base.Done():
	}
}

// enqueueQueue enqueues the unfinished Executions of a Sandbox.
func (r *Reconciler) enqueueQueue(ctx context.Context, q queue, namespace, sandbox string) {
	for _, req := range r.unfinished(ctx, namespace, sandbox) {
		q.Add(req)
	}
}

// enqueueFirst enqueues the first queued Execution of a Sandbox (in queuedBefore's order), whose turn may
// have come.
func (r *Reconciler) enqueueFirst(ctx context.Context, q queue, namespace, sandbox string) {
	list, err := r.executionsOf(ctx, namespace, sandbox)
	if err != nil {
		return
	}
	var first *dsv1alpha1.Execution
	for i := range list.Items {
		ex := &list.Items[i]
		if finished(ex) || ex.Status.Phase == dsv1alpha1.ExecutionRunning || !ex.DeletionTimestamp.IsZero() {
			continue
		}
		if first == nil || queuedBefore(ex, first, r.seen) {
			first = ex
		}
	}
	if first != nil {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(first)})
	}
}

// queueOf maps a Sandbox of this node to its unfinished Executions.
func (r *Reconciler) queueOf(ctx context.Context, sbx client.Object) []reconcile.Request {
	return r.unfinished(ctx, sbx.GetNamespace(), sbx.GetName())
}

func (r *Reconciler) unfinished(ctx context.Context, namespace, sandbox string) []reconcile.Request {
	list, err := r.executionsOf(ctx, namespace, sandbox)
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if !finished(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// executionsOf lists a Sandbox's Executions from the cache; a failure is logged, and moves no queue.
func (r *Reconciler) executionsOf(ctx context.Context, namespace, sandbox string) (*dsv1alpha1.ExecutionList, error) {
	var list dsv1alpha1.ExecutionList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{dsv1alpha1.FieldExecutionSandboxName: sandbox}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Executions of a Sandbox", "sandbox", sandbox)
		return nil, fmt.Errorf("listing the Executions of Sandbox %s: %w", sandbox, err)
	}
	return &list, nil
}
