package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// servePortForward speaks kubectl port-forward's protocols (SPDY, portforward.k8s.io, as the kubelet does,
// and that SPDY tunnelled in a WebSocket, as kubectl 1.31 and later ask first; the WebSocket channel
// protocol of other clients too) to a port of the Sandbox's primary, or of its instance of the
// SandboxService named by the query parameter service, their frames bounded as exec's are (boundSPDY,
// boundWebSocket). The agent dials the container's address on its Docker network from the host, as a
// readiness check of a port would; a container without a network (mode None) has no port to reach. The
// session is tied to the container it began with: every stream finds it again (forwarder.resolve), and the
// session ends, its connection cut, when the container is gone or replaced or the request's context ends
// (the Sandbox deleted or rebuilt, calls.go).
func servePortForward(w http.ResponseWriter, r *http.Request, driver dd.Driver, sbx *dsv1alpha1.Sandbox) {
	names := topology.NamesOf(sbx)
	container, what := names.Primary(), fmt.Sprintf("Sandbox %q", sbx.Name)
	if svc := r.URL.Query().Get("service"); svc != "" {
		if !slices.Contains(sbx.Spec.Services, svc) {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "Sandbox %q runs no SandboxService %q (spec.services: %v)", sbx.Name, svc, sbx.Spec.Services)
			return
		}
		container, what = names.Service(svc), fmt.Sprintf("the %s service of Sandbox %q", svc, sbx.Name)
	}
	info, err := driver.ObserveContainer(r.Context(), container)
	switch {
	case err != nil:
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "looking up %s: %v", what, err)
		return
	case !info.Exists || info.State != dd.StateRunning || !ownedBy(info, sbx):
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "%s is not running", what)
		return
	case info.IP == "":
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "%s has no network address (network mode None): no port to forward to", what)
		return
	}
	ctx, end := context.WithCancelCause(r.Context())
	defer end(context.Canceled)
	rec := &connRecorder{ResponseWriter: w}
	defer context.AfterFunc(ctx, rec.cut)() // the session ends with its container; its client sees it lost
	target := &forwarder{driver: driver, ctx: ctx, end: end, sbx: sbx, container: container, what: what, id: info.ID}
	pod, uid := sbx.Name, string(sbx.UID) // what the protocol's error messages name
	if wsstream.IsWebSocketRequestWithTunnelingProtocol(r) {
		// The WebSocket carries SPDY's bytes (subprotocol SPDY/3.1+portforward.k8s.io): the tunnel, the one
		// kube-apiserver and the kubelet use, upgrades it and hands the SPDY server a request and a connection
		// of its own, over which the client names its ports in SPDY stream headers.
		proxy.NewTunnelingHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			portforward.ServePortForward(&tunnelUpgrade{ResponseWriter: w}, r, target, pod, uid, &portforward.V4Options{},
				streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
		})).ServeHTTP(rec, r)
		return
	}
	bound := boundSPDY
	if wsstream.IsWebSocketRequest(r) { // the channel protocol, whose frames are read whole
		bound = boundWebSocket
	}
	fw, r, cancel := watchConnection(rec, r, bound)
	defer cancel()
	var opts *portforward.V4Options
	if r.URL.Query().Has("port") { // WebSocket clients of the channel protocol name their ports in the query
		if opts, err = portforward.NewV4Options(r); err != nil {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err)
			return
		}
	}
	portforward.ServePortForward(opaqueWriter{fw}, r, target, pod, uid, opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// opaqueWriter hands the WebSocket channel protocol a ResponseWriter it cannot unwrap: cri-streaming takes
// that protocol's writer apart down to net/http's own (httpresponse.GetOriginal) before it hijacks it, which
// would pass by the frame bound (watchConnection) and the cut at the Sandbox's end (connRecorder).
type opaqueWriter struct{ http.ResponseWriter }

func (o opaqueWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := o.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errNoHijack
	}
	return hj.Hijack() //nolint:wrapcheck // the wrapped writer's own error, passed through as a Hijacker does
}

// ownedBy says whether Docker's container carries the labels of sbx's current topology: its name says so
// too, but the address it is dialled at must be that container's and no other's.
func ownedBy(info dd.ContainerInfo, sbx *dsv1alpha1.Sandbox) bool {
	return info.Labels[dsv1alpha1.LabelUID] == string(sbx.UID) &&
		info.Labels[dsv1alpha1.LabelGeneration] == strconv.FormatInt(sbx.Status.TopologyGeneration, 10)
}

// tunnelUpgrade adapts the SPDY server's upgrade to the WebSocket tunnel, and bounds the SPDY frames read
// through it (boundSPDY); the tunnel itself reads the WebSocket's frames as a stream, holding none whole. The server answers 101 with
// WriteHeader and then hijacks the connection; the tunnel, made for a proxy in front of a SPDY server, takes
// the 101 and its headers (the protocol chosen) only as bytes written to the connection it hands out, and
// refuses a 101 through WriteHeader. So the 101 is held back and written to the connection at the hijack.
type tunnelUpgrade struct {
	http.ResponseWriter
}

func (t *tunnelUpgrade) WriteHeader(code int) {
	if code != http.StatusSwitchingProtocols {
		t.ResponseWriter.WriteHeader(code)
	}
}

func (t *tunnelUpgrade) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := t.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errNoHijack
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("taking over the WebSocket tunnel: %w", err)
	}
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	_ = t.Header().Write(&head)
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil { // the tunnel upgrades the WebSocket here
		_ = conn.Close()
		return nil, nil, fmt.Errorf("upgrading the WebSocket tunnel: %w", err)
	}
	return conn, bufio.NewReadWriter(bufio.NewReader(boundSPDY(conn)), bufio.NewWriter(conn)), nil
}

// forwarder connects each forwarded stream to the session's container at its address now: an address is
// never remembered, since once the container is gone its address, and its network's subnet, may be handed to
// another Sandbox (docs/design/dataplane.md, "Calls end with their Sandbox").
type forwarder struct {
	driver    dd.Driver
	ctx       context.Context // the session's: ends with its client, its container or its Sandbox
	end       context.CancelCauseFunc
	sbx       *dsv1alpha1.Sandbox
	container string // its name
	what      string // for messages
	id        string // the Docker ID the session began with
}

// resolve is the container's address now, after checking that it is the one the session began with, of the
// Sandbox's UID and topology generation; a container gone or replaced ends the session.
func (f *forwarder) resolve(port int32) (string, error) {
	if f.ctx.Err() != nil {
		return "", fmt.Errorf("the forward ended: %w", context.Cause(f.ctx))
	}
	info, err := f.driver.ObserveContainer(f.ctx, f.container)
	switch {
	case err != nil:
		return "", fmt.Errorf("looking up %s: %w", f.what, err)
	case !info.Exists || info.ID != f.id || !ownedBy(info, f.sbx):
		gone := &sandboxGone{f.sbx.Name, "was deleted or rebuilt: the container the forward began with is gone"}
		f.end(gone)
		return "", gone
	case info.State != dd.StateRunning || info.IP == "":
		return "", fmt.Errorf("%s is %s, not running", f.what, info.State)
	}
	return net.JoinHostPort(info.IP, strconv.Itoa(int(port))), nil
}

func (f *forwarder) PortForward(_ context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	addr, err := f.resolve(port)
	if err != nil {
		return err
	}
	var nd net.Dialer
	conn, err := nd.DialContext(f.ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connecting to port %d: %w", port, err)
	}
	defer conn.Close()
	defer context.AfterFunc(f.ctx, func() { _ = conn.Close(); _ = stream.Close() })()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the client's bytes to the port; its end ends the write side only
		defer wg.Done()
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, err = io.Copy(stream, conn)
	_ = stream.Close() // unblocks the other copy when the port closed first
	wg.Wait()
	var gone *sandboxGone
	switch {
	case errors.As(context.Cause(f.ctx), &gone):
		return gone
	case err != nil && !errors.Is(err, net.ErrClosed):
		return fmt.Errorf("forwarding port %d: %w", port, err)
	}
	return nil
}
