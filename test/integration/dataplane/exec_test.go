//go:build integration

package dataplane_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
	"github.com/dockside-dev/dockside/test/internal/sandboxexec"
)

const image = "dockside.dev/busybox:local"

// runningSandbox makes a Sandbox that the API server reports Running on node, with its primary container
// running in that node's fake daemon, its workspace mounted.
func runningSandbox(ns, name, node string, lifecycle dsv1alpha1.Lifecycle) *dsv1alpha1.Sandbox {
	ctx := context.Background()
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.SandboxSpec{Image: image, NodeName: node, Lifecycle: lifecycle},
	}
	Expect(k8s.Create(ctx, sbx)).To(Succeed())
	sbx.Status.NodeName, sbx.Status.Phase, sbx.Status.TopologyGeneration = node, dsv1alpha1.SandboxRunning, 1
	if lifecycle == dsv1alpha1.LifecyclePaused {
		sbx.Status.Phase = dsv1alpha1.SandboxPaused
	}
	Expect(k8s.Status().Update(ctx, sbx)).To(Succeed())
	buildPrimary(sbx, node)
	return sbx
}

// buildPrimary makes and starts the Sandbox's workspace and primary in node's daemon, as its agent does.
func buildPrimary(sbx *dsv1alpha1.Sandbox, node string) {
	GinkgoHelper()
	ctx := context.Background()
	names := topology.NamesOf(sbx)
	d := nodes[node].driver
	d.AddImage(image, dd.ImageInfo{})
	w := topology.PrimaryWritable(sbx.Spec).Workspace
	_, err := d.EnsureVolume(ctx, dd.VolumeSpec{Name: names.Workspace(), Owner: names.WorkspaceOwner(), Role: dsv1alpha1.RoleWorkspace, SizeBytes: w.SizeBytes})
	Expect(err).NotTo(HaveOccurred())
	_, err = d.EnsureContainer(ctx, dd.ContainerSpec{
		Name: names.Primary(), Owner: names.Owner(), Role: dsv1alpha1.RolePrimary, Image: image,
		Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64},
		Mounts:    []dd.VolumeMount{{Volume: names.Workspace(), Target: w.Target}},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(d.StartContainer(ctx, names.Primary())).To(Succeed())
}

// echoHandler plays every command as: print the node's name, copy stdin to stdout, exit with the command's
// second word as the code ("exit 3").
func echoHandler(node string) func(context.Context, string, dd.StreamExecRequest) int {
	return func(_ context.Context, _ string, req dd.StreamExecRequest) int {
		fmt.Fprintf(req.Stdout, "on %s: %s\n", node, strings.Join(req.Command, " "))
		if req.Stdin != nil {
			_, _ = io.Copy(req.Stdout, req.Stdin)
		}
		code := 0
		if len(req.Command) == 2 && req.Command[0] == "exit" {
			_, _ = fmt.Sscan(req.Command[1], &code)
		}
		return code
	}
}

// execThrough runs command in the Sandbox as kubectl exec does, with the executor named: "websocket" or
// "spdy". It returns stdout and the error (a CodeExitError for an exit code).
func execThrough(cfg *rest.Config, protocol, ns, name, stdin string, command ...string) (string, error) {
	exec, err := sandboxexec.Executor(cfg, protocol, ns, name,
		url.Values{"command": command, "stdout": {"true"}, "stderr": {"true"}, "stdin": {fmt.Sprint(stdin != "")}})
	Expect(err).NotTo(HaveOccurred())
	var out, errOut bytes.Buffer
	opts := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	err = exec.StreamWithContext(context.Background(), opts)
	return out.String(), err
}

var _ = Describe("exec through the API server", Ordered, func() {
	var alice, viewer *rest.Config

	BeforeAll(func() {
		namespace("team-a")
		namespace("team-b")
		alice = userConfig("alice", "dockside-edit", "team-a")
		viewer = userConfig("victor", "dockside-view", "team-a", "team-b")
		for name, n := range nodes {
			n.driver.SetStreamExecHandler(echoHandler(name))
		}
		runningSandbox("team-a", "shell", "node-a", dsv1alpha1.LifecycleRunning)
		runningSandbox("team-b", "shell", "node-a", dsv1alpha1.LifecycleRunning)
		runningSandbox("team-a", "far", "node-b", dsv1alpha1.LifecycleRunning)
		runningSandbox("team-a", "frozen", "node-a", dsv1alpha1.LifecyclePaused)
	})

	for _, protocol := range []string{"websocket", "spdy"} {
		It("lets dockside-edit exec in its namespace, with stdin and the exit code ("+protocol+")", func() {
			out, err := execThrough(alice, protocol, "team-a", "shell", "typed\n", "cat")
			Expect(err).NotTo(HaveOccurred())
			Expect(out).To(Equal("on node-a: cat\ntyped\n"))
			out, err = execThrough(alice, protocol, "team-a", "shell", "", "exit", "3")
			var exit utilexec.CodeExitError
			Expect(errors.As(err, &exit)).To(BeTrue(), "an exit code, not %v", err)
			Expect(exit.Code).To(Equal(3))
			Expect(out).To(Equal("on node-a: exit 3\n"))
		})

		It("refuses dockside-edit in another namespace, and dockside-view anywhere, in the API server's words ("+protocol+")", func() {
			verb := map[string]string{"websocket": "get", "spdy": "create"}[protocol]
			_, err := execThrough(alice, protocol, "team-b", "shell", "", "true")
			Expect(err).To(MatchError(ContainSubstring(`User "alice" cannot %s resource "sandboxes/exec" in API group "subresources.dockside.dev" in the namespace "team-b"`, verb)))
			_, err = execThrough(viewer, protocol, "team-a", "shell", "", "true")
			Expect(err).To(MatchError(ContainSubstring(`User "victor" cannot %s resource "sandboxes/exec"`, verb)))
		})
	}

	It("serves a Sandbox of another node through that node's agent", func() {
		out, err := execThrough(alice, "websocket", "team-a", "far", "", "hostname")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("on node-b: hostname\n"), "node-a forwarded the call to node-b")
	})

	It("refuses a Paused Sandbox with 409 naming the state, and a missing one with 404", func() {
		_, err := execThrough(alice, "spdy", "team-a", "frozen", "", "true")
		Expect(err).To(MatchError(ContainSubstring(`Sandbox "frozen" is Paused: resume it first (kubectl dockside resume frozen)`)))
		_, err = execThrough(alice, "spdy", "team-a", "nothing-here", "", "true")
		Expect(err).To(MatchError(ContainSubstring(`sandboxes.dockside.dev "nothing-here" not found`)))
	})

	It("lists the Sandbox subresources in discovery", func() {
		dc, err := discovery.NewDiscoveryClientForConfig(alice)
		Expect(err).NotTo(HaveOccurred())
		list, err := dc.ServerResourcesForGroupVersion("subresources.dockside.dev/v1alpha1")
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, r := range list.APIResources {
			names = append(names, r.Name)
		}
		Expect(names).To(ConsistOf("sandboxes/exec", "sandboxes/files", "sandboxes/portforward", "sandboxes/processes"))
	})

	Context("called directly, not through the API server", func() {
		// direct POSTs to node-a as the front proxy would (with its client certificate when withCert) for user,
		// and returns the status code and body, or why there was no answer.
		direct := func(withCert bool, user string) (int, string, error) {
			ca, err := os.ReadFile(filepath.Join(certDir, "dataplane", "ca.crt"))
			Expect(err).NotTo(HaveOccurred())
			roots := x509.NewCertPool()
			Expect(roots.AppendCertsFromPEM(ca)).To(BeTrue())
			cfg := &tls.Config{RootCAs: roots, ServerName: "dockside-dataplane.dockside-system.svc"}
			if withCert {
				cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "front-proxy-client.crt"), filepath.Join(certDir, "front-proxy-client.key"))
				Expect(err).NotTo(HaveOccurred())
				cfg.Certificates = []tls.Certificate{cert}
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			req, err := http.NewRequest("POST", "https://"+nodes["node-a"].address+
				"/apis/subresources.dockside.dev/v1alpha1/namespaces/team-a/sandboxes/shell/exec?command=true&stdout=true", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("X-Remote-User", user)
			resp, err := c.Do(req)
			if err != nil {
				return 0, "", err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, string(body), nil
		}

		It("answers nothing without a client certificate of the front proxy or an agent: the handshake fails", func() {
			_, _, err := direct(false, "alice")
			Expect(err).To(MatchError(ContainSubstring("certificate required")))
		})

		It("asks the API server itself whether the user the front proxy names may exec", func() {
			code, body, err := direct(true, "mallory")
			Expect(err).NotTo(HaveOccurred())
			Expect(code).To(Equal(http.StatusForbidden))
			var st metav1.Status
			Expect(json.Unmarshal([]byte(body), &st)).To(Succeed())
			Expect(st.Message).To(ContainSubstring(`User "mallory" cannot create resource "sandboxes/exec" in API group "subresources.dockside.dev" in the namespace "team-a"`))
			code, body, err = direct(true, "alice")
			Expect(err).NotTo(HaveOccurred())
			Expect(code).To(Equal(http.StatusBadRequest), "alice may: the plain POST then fails as no stream upgrade: %s", body)
		})
	})
})
