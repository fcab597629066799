package dataplane

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/net/websocket"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// A client that goes away while its command writes nothing ends the command, over either protocol, with or
// without a terminal: the connection's end is seen at once, not at the command's next write.
func TestExecEndsWithItsConnection(t *testing.T) {
	executors := map[string]func(*rest.Config, *url.URL) (remotecommand.Executor, error){
		"websocket-v4": func(_ *rest.Config, u *url.URL) (remotecommand.Executor, error) { return v4Client{u}, nil },
		"websocket": func(c *rest.Config, u *url.URL) (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(c, "GET", u.String())
		},
		"spdy": func(c *rest.Config, u *url.URL) (remotecommand.Executor, error) {
			return remotecommand.NewSPDYExecutor(c, "POST", u)
		},
	}
	for protocol, newExecutor := range executors {
		for _, tty := range []bool{false, true} {
			t.Run(protocol+map[bool]string{false: "/streams", true: "/terminal"}[tty], func(t *testing.T) {
				g := NewWithT(t)
				d, container := runningPrimary(t)
				started, ended := make(chan struct{}), make(chan struct{})
				d.SetStreamExecHandler(func(ctx context.Context, _ string, _ dd.StreamExecRequest) int {
					close(started)
					<-ctx.Done() // a silent command: only its context can end it
					close(ended)
					return 0
				})
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					serveExec(w, r, executor{driver: d}, container)
				}))
				defer srv.Close()

				u, err := url.Parse(srv.URL + "/exec?command=sleep&command=300&stdout=true&tty=" + map[bool]string{false: "false", true: "true"}[tty])
				g.Expect(err).NotTo(HaveOccurred())
				exec, err := newExecutor(&rest.Config{Host: srv.URL}, u)
				g.Expect(err).NotTo(HaveOccurred())
				ctx, leave := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Tty: tty}) }()
				g.Eventually(started, 30*time.Second).Should(BeClosed())
				g.Consistently(ended, 200*time.Millisecond).ShouldNot(BeClosed(), "the command runs while its client is there")

				leave() // the client closes its connection
				g.Eventually(done, 30*time.Second).Should(Receive())
				g.Eventually(ended, 30*time.Second).Should(BeClosed(), "the command ends with its connection")
			})
		}
	}
}

// runningPrimary is a running primary container on the fake driver.
func runningPrimary(t testing.TB) (*fake.Driver, string) {
	g, ctx := NewWithT(t), context.Background()
	d := fake.New("node-a")
	d.AddImage("busybox", dd.ImageInfo{})
	owner := dd.Owner{Namespace: "ns", Name: "sbx", UID: "uid-1", Generation: 1}
	spec := dd.ContainerSpec{
		Name: dd.Name(owner, dsv1alpha1.RolePrimary, ""), Owner: owner, Role: dsv1alpha1.RolePrimary, Image: "busybox",
		Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64},
	}
	_, err := d.EnsureContainer(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.StartContainer(ctx, spec.Name)).To(Succeed())
	return d, spec.Name
}

// v4Client opens a bare v4 WebSocket, as the Python client does, and closes it when ctx ends.
type v4Client struct{ u *url.URL }

func (c v4Client) Stream(remotecommand.StreamOptions) error {
	return errors.New("only StreamWithContext")
}

func (c v4Client) StreamWithContext(ctx context.Context, _ remotecommand.StreamOptions) error {
	cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(c.u.String(), "http"), "http://"+c.u.Host)
	if err != nil {
		return err
	}
	cfg.Protocol = []string{v4Protocol}
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return ws.Close()
}
