package dataplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// cutGrace is how long a call ended by its Sandbox has to end by itself (an exec writes its error Status,
// which names why) before its connection is cut from under it.
const cutGrace = 10 * time.Second

// watchSandboxes ends the open calls of Sandboxes that the agent's watch of its node's Sandboxes shows deleted
// or rebuilt, until ctx ends. Without Options.Sandboxes no event ends a call (port-forward streams still check
// the container each time, servePortForward).
func (s *Server) watchSandboxes(ctx context.Context) error {
	if s.opts.Sandboxes == nil {
		return nil
	}
	inf, err := s.opts.Sandboxes.GetInformer(ctx, &dsv1alpha1.Sandbox{})
	if err != nil {
		return fmt.Errorf("watching the node's Sandboxes for the data plane: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if sbx, ok := obj.(*dsv1alpha1.Sandbox); ok {
				s.calls.seen(sbx)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if sbx, ok := obj.(*dsv1alpha1.Sandbox); ok {
				s.calls.gone(sbx)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching the node's Sandboxes for the data plane: %w", err)
	}
	context.AfterFunc(ctx, func() { _ = inf.RemoveEventHandler(reg) })
	return nil
}

// track ties a call into sbx, served here, to the Sandbox's identity until the returned function is called:
// the request's context ends, with a *sandboxGone cause, when the Sandbox is deleted or rebuilt, and a
// connection a stream protocol took over is cut if the call has not ended cutGrace later.
func (s *Server) track(w http.ResponseWriter, r *http.Request, sbx *dsv1alpha1.Sandbox, t target) (http.ResponseWriter, *http.Request, func()) {
	service := ""
	if t.Subresource == PortForward {
		service = r.URL.Query().Get("service")
	}
	ctx, cl := s.calls.enter(r.Context(), identityOf(sbx, service))
	s.recheck(ctx, cl)
	rec := &connRecorder{ResponseWriter: w}
	returned := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		var gone *sandboxGone
		if !errors.As(context.Cause(ctx), &gone) {
			return
		}
		select {
		case <-returned:
		case <-time.After(cutGrace):
			rec.cut()
		}
	})
	return rec, r.WithContext(ctx), func() {
		stop()
		close(returned)
		s.calls.leave(cl)
	}
}

// recheck judges the call against the Sandbox as the agent's cache holds it now: an event that came between
// the call's lookup and its entry ended nothing. A cache holding another UID under the name (a moment behind)
// says nothing of this one; a deletion it missed is in the registry's tombstones.
func (s *Server) recheck(ctx context.Context, cl *call) {
	now := &dsv1alpha1.Sandbox{}
	key := client.ObjectKey{Namespace: cl.id.namespace, Name: cl.id.sandbox}
	if err := s.opts.Client.Get(ctx, key, now); err != nil || now.UID != cl.id.uid {
		return
	}
	if why := cl.id.judge(now); why != nil {
		cl.end(why)
	}
}

// connRecorder is a ResponseWriter that keeps the connection a stream protocol (SPDY, WebSocket) takes over,
// so that the server can cut the call: net/http cancels nothing of a hijacked connection.
type connRecorder struct {
	http.ResponseWriter
	mu   sync.Mutex
	conn net.Conn
	cuts bool // cut was called: a connection taken over later is closed at once
}

func (c *connRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := c.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errNoHijack
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err //nolint:wrapcheck // net/http's own error, passed through as a Hijacker does
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = conn
	if c.cuts {
		_ = conn.Close()
	}
	return conn, brw, nil
}

// cut closes the connection taken over, now or when it is.
func (c *connRecorder) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cuts = true
	if c.conn != nil {
		_ = c.conn.Close()
	}
}

// Flush passes on to the ResponseWriter, which a stream's handshake may flush.
func (c *connRecorder) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the ResponseWriter.
func (c *connRecorder) Unwrap() http.ResponseWriter { return c.ResponseWriter }
