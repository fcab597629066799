package agent

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	ddfake "github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/runtimes"
)

// A read that finds the daemon's runtimes changed swaps what the node offers and looks at every unbound
// Sandbox again; a read that finds them as they were, or a daemon that does not answer, changes nothing.
func TestRuntimesWatchRereads(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	waiting := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "waiting"}}
	docker := ddfake.New("node-a")
	start, err := nodeRuntimes(context.Background(), docker, Options{DockerTimeout: time.Second, GVisorRuntimeName: "runsc"}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	requeues := make(chan event.TypedGenericEvent[*dsv1alpha1.Sandbox], 4)
	w := newRuntimesWatch(runtimesWatch{
		driver: docker, live: runtimes.NewLive(start), requeues: requeues, log: logr.Discard(),
		opts:    Options{DockerTimeout: time.Second, GVisorRuntimeName: "runsc", RuntimesPeriod: time.Hour},
		unbound: fake.NewClientBuilder().WithScheme(scheme).WithObjects(waiting).Build(),
	})

	w.reread(context.Background())
	if len(requeues) != 0 {
		t.Fatalf("the same runtimes requeued %d Sandboxes", len(requeues))
	}

	docker.SetRuntimes("runc", "runsc")
	w.reread(context.Background())
	if got := w.live.Node().AnnotationValue(); got != "gVisor,runc" {
		t.Fatalf("after runsc was registered the node offers %q", got)
	}
	if len(requeues) != 1 || (<-requeues).Object.Name != "waiting" {
		t.Fatalf("the unbound Sandbox was not looked at again")
	}

	docker.SetRuntimes("runc")
	w.reread(context.Background())
	if got := w.live.Node().AnnotationValue(); got != "runc" {
		t.Fatalf("after runsc was removed the node offers %q", got)
	}
	<-requeues

	docker.SetRuntimes("runc", "runsc")
	docker.FailNext(ddfake.OpRuntimes, dd.KindUnavailable)
	w.reread(context.Background())
	if got := w.live.Node().AnnotationValue(); got != "runc" || len(requeues) != 0 {
		t.Fatalf("a daemon that did not answer changed the node's runtimes to %q", got)
	}
}

// Kick never blocks: kicks while a read is pending fold into it.
func TestRuntimesWatchKick(t *testing.T) {
	w := newRuntimesWatch(runtimesWatch{})
	w.Kick()
	w.Kick()
	if len(w.kick) != 1 {
		t.Fatalf("%d kicks pending, want 1", len(w.kick))
	}
}
