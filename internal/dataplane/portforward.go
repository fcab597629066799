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
// and that SPDY tunnelled in a WebSocket, as kubectl 1.31 and later ask first) to a port of the Sandbox's
// primary, or of its instance of the SandboxService named by the query parameter service. The agent dials the container's address on its Docker network from the host, as a readiness
// check of a port would; a container without a network (mode None) has no port to reach.
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
	case !info.Exists || info.State != dd.StateRunning:
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "%s is not running", what)
		return
	case info.IP == "":
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "%s has no network address (network mode None): no port to forward to", what)
		return
	}
	target := dialer{ip: info.IP}
	if wsstream.IsWebSocketRequestWithTunnelingProtocol(r) {
		// The WebSocket carries SPDY's bytes (subprotocol SPDY/3.1+portforward.k8s.io): the tunnel, the one
		// kube-apiserver and the kubelet use, upgrades it and hands the SPDY server a request and a connection
		// of its own, over which the client names its ports in SPDY stream headers.
		proxy.NewTunnelingHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			portforward.ServePortForward(&tunnelUpgrade{ResponseWriter: w}, r, target, container, "", &portforward.V4Options{},
				streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
		})).ServeHTTP(w, r)
		return
	}
	var opts *portforward.V4Options
	if r.URL.Query().Has("port") { // WebSocket clients of the channel protocol name their ports in the query
		if opts, err = portforward.NewV4Options(r); err != nil {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err)
			return
		}
	}
	portforward.ServePortForward(w, r, target, container, "", opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// tunnelUpgrade adapts the SPDY server's upgrade to the WebSocket tunnel. The server answers 101 with
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
	return conn, bufio.NewReadWriter(bufio.NewReader(conn), bufio.NewWriter(conn)), nil
}

// dialer connects each forwarded stream to the container's address.
type dialer struct{ ip string }

func (d dialer) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, "tcp", net.JoinHostPort(d.ip, strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("connecting to port %d: %w", port, err)
	}
	defer conn.Close()
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
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("forwarding port %d: %w", port, err)
	}
	return nil
}
