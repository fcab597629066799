package dataplane

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/net/websocket"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// A client that goes away while its command writes nothing ends the command: the connection's end is seen
// at once, not at the command's next write.
func TestWebSocketExecEndsWithItsConnection(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(map[bool]string{false: "streams", true: "terminal"}[tty], func(t *testing.T) {
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
				serveWebSocketExec(w, r, executor{driver: d}, container, []string{"sleep", "300"},
					&remotecommand.Options{Stdout: true, Stderr: !tty, TTY: tty})
			}))
			defer srv.Close()

			cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(srv.URL, "http"), srv.URL)
			g.Expect(err).NotTo(HaveOccurred())
			cfg.Protocol = []string{v4Protocol}
			ws, err := websocket.DialConfig(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			g.Eventually(started, 30*time.Second).Should(BeClosed())
			g.Consistently(ended, 200*time.Millisecond).ShouldNot(BeClosed(), "the command runs while its client is there")

			g.Expect(ws.Close()).To(Succeed())
			g.Eventually(ended, 30*time.Second).Should(BeClosed(), "the command ends with its connection")
		})
	}
}

// runningPrimary is a running primary container on the fake driver.
func runningPrimary(t *testing.T) (*fake.Driver, string) {
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
