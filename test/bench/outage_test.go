package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dockside-dev/dockside/internal/status"
)

// The soak's own client rides out the API server's outages that its fault injector makes (faults_test.go):
// a cycle that failed because the test's client met the outage would blame the agent for the test.

// apiGate is closed while the fault injector has kube-apiserver down for a restart, so that the client does
// not reach a restarted server before it serves every API again (it answers 404 for the Sandbox kind until
// its CustomResourceDefinitions are loaded).
type apiGate struct {
	mu sync.Mutex
	up chan struct{} // closed while the API server serves
}

func newAPIGate() *apiGate {
	up := make(chan struct{})
	close(up)
	return &apiGate{up: up}
}

func (g *apiGate) down() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.up = make(chan struct{})
}

func (g *apiGate) back() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.up)
}

// wait returns once the API server serves, or ctx's error.
func (g *apiGate) wait(ctx context.Context) error {
	g.mu.Lock()
	up := g.up
	g.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rideOut calls call once the API server serves, again every second while it fails for an outage (no answer,
// or an answer that the server cannot serve now), until it succeeds, the server answers otherwise, or ctx ends.
func rideOut(ctx context.Context, api *apiGate, call func() error) error {
	for {
		if err := api.wait(ctx); err != nil {
			return err
		}
		err := call()
		if err == nil || !outage(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; the API server was out: %w", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// outage tells whether err is the API server's absence rather than its answer: no answer at all (a refused or
// broken connection, an HTTP/2 GOAWAY from a killed server), or one that a moment may cure (status.Transient).
func outage(err error) bool {
	var answer apierrors.APIStatus
	return status.Transient(err) || !errors.As(err, &answer)
}

func TestOutageIsNoAnswerOrAnUnavailableOne(t *testing.T) {
	gr := schema.GroupResource{Group: "dockside.dev", Resource: "sandboxes"}
	for err, want := range map[error]bool{
		fmt.Errorf("dial tcp 127.0.0.1:1: %w", syscall.ECONNREFUSED): true,
		apierrors.NewServiceUnavailable("starting"):                  true,
		apierrors.NewTooManyRequests("later", 1):                     true,
		apierrors.NewNotFound(gr, "s"):                               false,
		apierrors.NewAlreadyExists(gr, "s"):                          false,
		apierrors.NewBadRequest("no"):                                false,
	} {
		if got := outage(err); got != want {
			t.Errorf("outage(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestRideOutWaitsForTheGateAndRetriesOutagesOnly(t *testing.T) {
	api := newAPIGate()
	api.down()
	calls := 0
	go func() {
		time.Sleep(50 * time.Millisecond)
		api.back()
	}()
	err := rideOut(context.Background(), api, func() error {
		if calls++; calls == 1 {
			return syscall.ECONNREFUSED
		}
		return apierrors.NewBadRequest("no")
	})
	if !apierrors.IsBadRequest(err) || calls != 2 {
		t.Errorf("rideOut = %v after %d calls, want the second call's BadRequest", err, calls)
	}
	api.down()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := rideOut(ctx, api, func() error { t.Error("called while the API server was down"); return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("rideOut with the API server down = %v, want the deadline", err)
	}
}
