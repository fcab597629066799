package dataplane

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// loopbackPrimary is a driver whose every container runs at 127.0.0.1, where the test listens.
type loopbackPrimary struct{ dd.Driver }

func (loopbackPrimary) ObserveContainer(context.Context, string) (dd.ContainerInfo, error) {
	return dd.ContainerInfo{Exists: true, State: dd.StateRunning, IP: "127.0.0.1"}, nil
}

// Both of kubectl port-forward's protocols reach the port: plain SPDY, and SPDY tunnelled through a
// WebSocket (kubectl 1.31 and later), each dialled with no fallback to the other.
func TestPortForwardSpeaksSPDYAndTheWebSocketTunnel(t *testing.T) {
	dialers := map[string]func(*rest.Config, *url.URL) (httpstream.Dialer, error){
		"spdy": func(c *rest.Config, u *url.URL) (httpstream.Dialer, error) {
			transport, upgrader, err := spdy.RoundTripperFor(c)
			return spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u), err
		},
		"websocket": func(c *rest.Config, u *url.URL) (httpstream.Dialer, error) {
			return portforward.NewSPDYOverWebsocketDialerForStreaming(u, c)
		},
	}
	for protocol, dial := range dialers {
		t.Run(protocol, func(t *testing.T) {
			g := NewWithT(t)
			echo := lineEcho(t)
			sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "box", UID: "u"}}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				servePortForward(w, r, loopbackPrimary{}, sbx)
			}))
			defer srv.Close()
			u, err := url.Parse(srv.URL + "/portforward")
			g.Expect(err).NotTo(HaveOccurred())
			dialer, err := dial(&rest.Config{Host: srv.URL}, u)
			g.Expect(err).NotTo(HaveOccurred())
			stop, ready := make(chan struct{}), make(chan struct{})
			fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", echo)}, stop, ready, nil, nil)
			g.Expect(err).NotTo(HaveOccurred())
			forwarded := make(chan error, 1)
			go func() { forwarded <- fw.ForwardPorts() }()
			g.Eventually(ready, 30*time.Second).Should(BeClosed())
			ports, err := fw.GetPorts()
			g.Expect(err).NotTo(HaveOccurred())

			conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
			g.Expect(err).NotTo(HaveOccurred())
			defer conn.Close()
			g.Expect(conn.SetDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
			_, err = fmt.Fprintln(conn, "through "+protocol)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bufio.NewReader(conn).ReadString('\n')).To(Equal("through " + protocol + "\n"))

			close(stop)
			g.Eventually(forwarded, 30*time.Second).Should(Receive(BeNil()))
		})
	}
}

// lineEcho listens on a loopback port until the test ends and sends each connection's first line back.
func lineEcho(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				line, err := bufio.NewReader(conn).ReadString('\n')
				if err == nil {
					_, _ = conn.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
