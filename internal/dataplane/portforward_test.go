package dataplane

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
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
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/dataplane/forwardclient"
)

// loopbackIP is the fake driver with every running container at 127.0.0.1, where the test listens.
type loopbackIP struct{ *fake.Driver }

func (d loopbackIP) ObserveContainer(ctx context.Context, name string) (dd.ContainerInfo, error) {
	info, err := d.Driver.ObserveContainer(ctx, name)
	if info.State == dd.StateRunning {
		info.IP = "127.0.0.1"
	}
	return info, err //nolint:wrapcheck // the fake's own error, as a driver returns it
}

// primarySandbox is the Sandbox whose primary runningPrimary made.
func primarySandbox() *dsv1alpha1.Sandbox {
	return &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sbx", UID: "uid-1"},
		Status:     dsv1alpha1.SandboxStatus{TopologyGeneration: 1, Phase: dsv1alpha1.SandboxRunning},
	}
}

// forwardDialers are kubectl port-forward's two ways in.
var forwardDialers = map[string]func(*rest.Config, *url.URL) (httpstream.Dialer, error){
	"spdy": func(c *rest.Config, u *url.URL) (httpstream.Dialer, error) {
		transport, upgrader, err := spdy.RoundTripperFor(c)
		return spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u), err
	},
	"websocket": func(c *rest.Config, u *url.URL) (httpstream.Dialer, error) {
		return portforward.NewSPDYOverWebsocketDialerForStreaming(u, c)
	},
}

// openForward forwards a loopback port to port through handler with protocol, and returns the local port and
// the channel ForwardPorts's result comes on; the forward is stopped when the test ends.
func openForward(t *testing.T, handler http.HandlerFunc, protocol string, port int) (int, <-chan error) {
	g := NewWithT(t)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL + "/portforward")
	g.Expect(err).NotTo(HaveOccurred())
	dialer, err := forwardDialers[protocol](&rest.Config{Host: srv.URL}, u)
	g.Expect(err).NotTo(HaveOccurred())
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, nil, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	forwarded := make(chan error, 1)
	go func() { forwarded <- fw.ForwardPorts() }()
	t.Cleanup(func() { close(stop) })
	g.Eventually(ready, 30*time.Second).Should(BeClosed())
	ports, err := fw.GetPorts()
	g.Expect(err).NotTo(HaveOccurred())
	return int(ports[0].Local), forwarded
}

// roundTrip writes a line to the local port and reads the line that comes back.
func roundTrip(local int, line string) (string, error) {
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintln(conn, line); err != nil {
		return "", err
	}
	return bufio.NewReader(conn).ReadString('\n')
}

// Both of kubectl port-forward's protocols reach the port: plain SPDY, and SPDY tunnelled through a
// WebSocket (kubectl 1.31 and later), each dialled with no fallback to the other.
func TestPortForwardSpeaksSPDYAndTheWebSocketTunnel(t *testing.T) {
	for protocol := range forwardDialers {
		t.Run(protocol, func(t *testing.T) {
			g := NewWithT(t)
			echo, _ := lineEcho(t)
			d, _ := runningPrimary(t)
			sbx := primarySandbox()
			local, forwarded := openForward(t, func(w http.ResponseWriter, r *http.Request) {
				servePortForward(w, r, loopbackIP{d}, sbx)
			}, protocol, echo)
			g.Expect(roundTrip(local, "through "+protocol)).To(Equal("through " + protocol + "\n"))
			g.Consistently(forwarded, 100*time.Millisecond).ShouldNot(Receive(), "the forward goes on")
		})
	}
}

// lineEcho listens on a loopback port until the test ends and sends each connection's lines back; accepted
// counts the connections that reached it.
func lineEcho(t *testing.T) (int, *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	accepted := &atomic.Int32{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer conn.Close()
				_, _ = io.Copy(conn, conn)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

// A forward's streams each find the container again, and a container replaced under the same name (the
// address it is at now may be anyone's) is never dialled: the stream is refused and the session ends.
func TestPortForwardDialsOnlyTheContainerItBeganWith(t *testing.T) {
	for protocol := range forwardDialers {
		t.Run(protocol, func(t *testing.T) {
			g, ctx := NewWithT(t), t.Context()
			echo, accepted := lineEcho(t)
			d, container := runningPrimary(t)
			sbx := primarySandbox()
			local, forwarded := openForward(t, func(w http.ResponseWriter, r *http.Request) {
				servePortForward(w, r, loopbackIP{d}, sbx)
			}, protocol, echo)
			g.Expect(roundTrip(local, "first")).To(Equal("first\n"))
			g.Expect(accepted.Load()).To(BeEquivalentTo(1))

			// The same name, labels and address, another container.
			spec := dd.ContainerSpec{
				Name: container, Owner: dd.Owner{Namespace: "ns", Name: "sbx", UID: "uid-1", Generation: 1}, Role: dsv1alpha1.RolePrimary,
				Image: "busybox", Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64},
			}
			g.Expect(d.RemoveContainer(ctx, container)).To(Succeed())
			_, err := d.EnsureContainer(ctx, spec)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.StartContainer(ctx, container)).To(Succeed())

			_, err = roundTrip(local, "second")
			g.Expect(err).To(HaveOccurred(), "nothing answers through the forward")
			g.Eventually(forwarded, 30*time.Second).Should(Receive(MatchError(portforward.ErrLostConnectionToPod)))
			g.Expect(accepted.Load()).To(BeEquivalentTo(1), "no connection reached the address")
			_, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
			g.Expect(err).To(HaveOccurred(), "the local port is closed")
		})
	}
}

// A forward ends when its Sandbox is deleted: the connection open through it is cut, the client sees the
// session lost, and the container's address is reached no more.
func TestPortForwardEndsWithItsSandbox(t *testing.T) {
	for protocol := range forwardDialers {
		t.Run(protocol, func(t *testing.T) {
			g := NewWithT(t)
			echo, accepted := lineEcho(t)
			d, _ := runningPrimary(t)
			s, informer := watchingServer(t, d, primarySandbox())
			srv := serveTracked(t, s, primarySandbox(), PortForward, func(w http.ResponseWriter, r *http.Request) {
				servePortForward(w, r, loopbackIP{d}, primarySandbox())
			})
			local, forwarded := openForward(t, func(w http.ResponseWriter, r *http.Request) { srv.Config.Handler.ServeHTTP(w, r) }, protocol, echo)
			open, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
			g.Expect(err).NotTo(HaveOccurred())
			defer open.Close()
			g.Expect(open.SetDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
			in := bufio.NewReader(open)
			_, err = fmt.Fprintln(open, "before")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(in.ReadString('\n')).To(Equal("before\n"))

			informer.Delete(primarySandbox())
			g.Eventually(forwarded, 30*time.Second).Should(Receive(MatchError(portforward.ErrLostConnectionToPod)))
			_, err = in.ReadString('\n')
			g.Expect(err).To(HaveOccurred(), "the open connection was cut")
			_, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
			g.Expect(err).To(HaveOccurred(), "the local port is closed")
			g.Expect(accepted.Load()).To(BeEquivalentTo(1), "only the connection made before reached the address")
		})
	}
}

// forwardclient.Session, the E2B gateway's way to a port (docs/e2b.md), reaches the port over either protocol
// with a connection per pair of streams in one session,
// and a port nothing listens on reads as the server's refusal, not as a connection the port closed.
func TestForwardClientDialsOnePort(t *testing.T) {
	for _, websockets := range []bool{true, false} {
		t.Run(fmt.Sprintf("websockets=%v", websockets), func(t *testing.T) {
			g := NewWithT(t)
			echo, _ := lineEcho(t)
			d, _ := runningPrimary(t)
			sbx := primarySandbox()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				servePortForward(w, r, loopbackIP{d}, sbx)
			}))
			t.Cleanup(srv.Close)
			u, err := url.Parse(srv.URL + "/portforward")
			g.Expect(err).NotTo(HaveOccurred())
			dialer, err := forwardclient.Dialer(&rest.Config{Host: srv.URL}, u, websockets)
			g.Expect(err).NotTo(HaveOccurred())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			session, err := forwardclient.Open(ctx, dialer)
			g.Expect(err).NotTo(HaveOccurred())
			defer session.Close()
			for i := range 3 { // one session, a pair of streams per connection, each closed alone
				conn, err := session.Dial(echo)
				g.Expect(err).NotTo(HaveOccurred())
				_, err = fmt.Fprintf(conn, "one port %d\n", i)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(bufio.NewReader(conn).ReadString('\n')).To(Equal(fmt.Sprintf("one port %d\n", i)))
				g.Expect(conn.Close()).To(Succeed())
			}

			ln, err := net.Listen("tcp", "127.0.0.1:0")
			g.Expect(err).NotTo(HaveOccurred())
			closed := ln.Addr().(*net.TCPAddr).Port
			g.Expect(ln.Close()).To(Succeed())
			conn, err := session.Dial(closed)
			g.Expect(err).NotTo(HaveOccurred())
			defer conn.Close()
			_, err = conn.Read(make([]byte, 1))
			g.Expect(forwardclient.IsPortError(err)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("connecting to port"))
			select {
			case <-session.Done():
				t.Fatal("a refused connection ended the session")
			default:
			}
		})
	}
}
