//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/dockside-dev/dockside/test/internal/agentproc"
)

const pythonImage = "dockside.dev/python:local"

// mcpClient is the go-sdk's own client connected over stdio to `kubectl dockside mcp`, as an MCP host runs it,
// with the progress notifications it got.
type mcpClient struct {
	session  *mcp.ClientSession
	mu       sync.Mutex
	progress map[any][]string
}

// startMCP runs `kubectl dockside mcp ARGS...` with kubeconfig and connects to it.
func startMCP(ctx context.Context, kubeconfig string, args ...string) *mcpClient {
	GinkgoHelper()
	bin, err := filepath.Abs(agentproc.BinDir())
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(cp.KubectlPath, append([]string{"dockside", "mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stderr = GinkgoWriter
	c := &mcpClient{progress: map[any][]string{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.progress[req.Params.ProgressToken] = append(c.progress[req.Params.ProgressToken], req.Params.Message)
		},
	})
	c.session, err = client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// call calls a tool with a progress token of its name; it returns the structured output, or the error text.
func (c *mcpClient) call(ctx context.Context, token, tool string, args map[string]any) (map[string]any, string) {
	GinkgoHelper()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken(token)
	res, err := c.session.CallTool(ctx, params)
	Expect(err).NotTo(HaveOccurred())
	if res.IsError {
		return nil, res.Content[0].(*mcp.TextContent).Text
	}
	var out map[string]any
	data, err := json.Marshal(res.StructuredContent)
	Expect(err).NotTo(HaveOccurred())
	Expect(json.Unmarshal(data, &out)).To(Succeed())
	return out, ""
}

func (c *mcpClient) mustCall(ctx context.Context, tool string, args map[string]any) map[string]any {
	GinkgoHelper()
	out, msg := c.call(ctx, tool, tool, args)
	Expect(msg).To(BeEmpty(), "%s failed", tool)
	return out
}

func (c *mcpClient) progressOf(token string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string{}, c.progress[token]...)
}

// editorKubeconfig writes a kubeconfig of a new user who has dockside-edit in ns only, its context's namespace ns.
func editorKubeconfig(ns, user string) string {
	GinkgoHelper()
	roles, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "user_roles.yaml"))
	Expect(err).NotTo(HaveOccurred())
	_, err = admin().RunWithInput(string(roles), "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred())
	_, err = kubectl("create", "rolebinding", user+"-edit", "-n", ns, "--clusterrole=dockside-edit", "--user="+user)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := cp.AddUser(user)
	Expect(err).NotTo(HaveOccurred())
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user, Namespace: ns}
	kc.CurrentContext = "e2e"
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

var _ = Describe("kubectl dockside mcp", func() {
	It("serves a Sandbox's tools over stdio to the go-sdk's client, with a user's own credentials, confined", func(ctx SpecContext) {
		ns := newNamespace("mcp")
		c := startMCP(ctx, editorKubeconfig(ns, "mcp-user"), "--image", pythonImage, "--image", busybox)
		defer func() { Expect(c.session.Close()).To(Succeed()) }()

		out := c.mustCall(ctx, "create_sandbox", map[string]any{"name": "py", "image": pythonImage, "memory": "256Mi", "pids": 128})
		Expect(out).To(HaveKeyWithValue("phase", "Running"))
		Expect(out).To(HaveKeyWithValue("namespace", ns), "the context's namespace")
		Expect(field(ns, "sandbox/py", "{.spec.resources.memory} {.spec.resources.pids}")).To(Equal("256Mi 128"))
		DeferCleanup(func() {
			if len(containers(ns, "py", "")) > 0 {
				deleteAndExpectGone(ns, "py")
			}
		})

		By("run_command streams: its first line arrives as progress while it waits for a file that only comes later")
		done := make(chan map[string]any, 1)
		go func() {
			defer GinkgoRecover()
			out, msg := c.call(ctx, "wait", "run_command", map[string]any{"sandbox": "py",
				"command": "echo started; while [ ! -e /workspace/go ]; do sleep 0.1; done; echo finished; echo oops >&2; exit 3"})
			Expect(msg).To(BeEmpty())
			done <- out
		}()
		Eventually(func() string { return strings.Join(c.progressOf("wait"), "") }, time.Minute).Should(Equal("started\n"))
		Consistently(done, time.Second).ShouldNot(Receive(), "the command still runs")
		c.mustCall(ctx, "write_file", map[string]any{"sandbox": "py", "path": "/workspace/go", "content": ""})
		Eventually(done, time.Minute).Should(Receive(And(
			HaveKeyWithValue("exit_code", BeEquivalentTo(3)),
			HaveKeyWithValue("stdout", "started\nfinished\n"),
			HaveKeyWithValue("stderr", "oops\n"))))

		By("files: write, read, list")
		c.mustCall(ctx, "write_file", map[string]any{"sandbox": "py", "path": "/workspace/hello.py", "content": "print('héllo')\n"})
		out = c.mustCall(ctx, "read_file", map[string]any{"sandbox": "py", "path": "/workspace/hello.py"})
		Expect(out).To(HaveKeyWithValue("content", "print('héllo')\n"))
		Expect(out).To(HaveKeyWithValue("encoding", "utf-8"))
		out = c.mustCall(ctx, "list_files", map[string]any{"sandbox": "py", "path": "/workspace"})
		var names []string
		for _, e := range out["entries"].([]any) {
			names = append(names, e.(map[string]any)["name"].(string))
		}
		Expect(names).To(ContainElements("go", "hello.py"))

		By("run_python keeps its variables from one call to the next")
		out = c.mustCall(ctx, "run_python", map[string]any{"sandbox": "py", "code": "x = 21\nexec(open('/workspace/hello.py').read())"})
		Expect(out).To(HaveKeyWithValue("stdout", "héllo\n"))
		Expect(out).To(HaveKeyWithValue("restarted", true))
		out = c.mustCall(ctx, "run_python", map[string]any{"sandbox": "py", "code": "x * 2"})
		Expect(out).To(HaveKeyWithValue("value", "42"))
		Expect(out).To(HaveKeyWithValue("restarted", false))
		out = c.mustCall(ctx, "run_python", map[string]any{"sandbox": "py", "code": "1/0"})
		Expect(out["error"]).To(HaveKeyWithValue("name", "ZeroDivisionError"))
		Expect(out["error"]).To(HaveKeyWithValue("traceback", ContainSubstring("ZeroDivisionError: division by zero")))

		By("checkpoint stores the workspace")
		out = c.mustCall(ctx, "checkpoint", map[string]any{"sandbox": "py", "name": "py-snap"})
		Expect(out).To(HaveKeyWithValue("phase", "Ready"))
		Expect(out).To(HaveKeyWithValue("digest", HavePrefix("sha256:")))
		_, err := kubectl("delete", "-n", ns, "checkpoint", "py-snap", "--timeout=90s")
		Expect(err).NotTo(HaveOccurred())

		By("refusals name the rule, and change nothing")
		_, msg := c.call(ctx, "refused", "create_sandbox", map[string]any{"name": "redis", "image": "dockside.dev/redis:local"})
		Expect(msg).To(Equal(`refused: image "dockside.dev/redis:local" is not one this server may run (--image: dockside.dev/python:local, dockside.dev/busybox:local)`))
		_, msg = c.call(ctx, "refused", "run_command", map[string]any{"sandbox": "py", "namespace": "default", "command": "true"})
		Expect(msg).To(Equal(`refused: namespace "default" is not this server's; it is confined to namespace "` + ns + `" (--namespace)`))
		Expect(kubectl("get", "sandboxes", "-n", ns, "-o", "name")).To(Equal("sandbox.dockside.dev/py\n"))

		By("delete_sandbox removes it and all it had on Docker")
		out = c.mustCall(ctx, "delete_sandbox", map[string]any{"sandbox": "py"})
		Expect(out).To(HaveKeyWithValue("deleted", "py"))
		Expect(containers(ns, "py", "")).To(BeEmpty())
	})
})
