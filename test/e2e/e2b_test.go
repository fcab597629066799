//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"connectrpc.com/connect"

	"github.com/dockside-dev/dockside/internal/e2b/envdapi/filesystem"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/filesystem/filesystemconnect"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process/processconnect"
	"github.com/dockside-dev/dockside/test/internal/agentproc"
	"github.com/dockside-dev/dockside/test/internal/loopback"
)

// e2bRole lets the ServiceAccount agent use the E2B gateway in its namespace (docs/e2b.md, "Keys are
// Kubernetes identities").
const e2bRole = `apiVersion: v1
kind: ServiceAccount
metadata: {name: agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: e2b}
rules:
  - apiGroups: [dockside.dev]
    resources: [sandboxes, sandboxclaims]
    verbs: [get, list, watch, create, patch, delete]
  - apiGroups: [dockside.dev]
    resources: [sandboxtemplates, sandboxwarmpools, sandboxservices]
    verbs: [get, list]
  - apiGroups: [dockside.dev]
    resources: [checkpoints]
    verbs: [get, list, create, delete]
  - apiGroups: [subresources.dockside.dev]
    resources: [sandboxes/exec, sandboxes/files, sandboxes/processes, sandboxes/portforward]
    verbs: [get, create, update, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e2b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: e2b}
subjects: [{kind: ServiceAccount, name: agent}]
---
apiVersion: dockside.dev/v1alpha1
kind: SandboxTemplate
metadata: {name: base}
spec:
  sandbox: {image: dockside.dev/busybox:local}
`

// e2bClient is what an E2B SDK does on the wire, written from E2B's specs: JSON on the control plane with
// X-API-Key, Connect's JSON envelopes and /files on envd with E2b-Sandbox-Id and X-Access-Token.
type e2bClient struct {
	url, key string
	// transport reaches the gateway (nil: the default one, for plain HTTP).
	transport http.RoundTripper
}

func (c e2bClient) do(method, path string, header http.Header, body io.Reader) (int, []byte) {
	GinkgoHelper()
	req, err := http.NewRequest(method, c.url+path, body)
	Expect(err).NotTo(HaveOccurred())
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := (&http.Client{Timeout: 3 * time.Minute, Transport: c.transport}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, data
}

func (c e2bClient) api(method, path string, body any) (int, []byte) {
	GinkgoHelper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		rd = bytes.NewReader(data)
	}
	return c.do(method, path, http.Header{"X-Api-Key": {c.key}, "Content-Type": {"application/json"}}, rd)
}

func (c e2bClient) envd(sandbox string) http.Header {
	return http.Header{"E2b-Sandbox-Id": {sandbox}, "X-Access-Token": {c.key}}
}

// start runs a command through process.Process/Start and returns its events, decoded, and the end-of-stream
// message.
func (c e2bClient) start(sandbox string, msg any) ([]map[string]any, map[string]any) {
	GinkgoHelper()
	data, err := json.Marshal(msg)
	Expect(err).NotTo(HaveOccurred())
	var body bytes.Buffer
	body.WriteByte(0)
	Expect(binary.Write(&body, binary.BigEndian, uint32(len(data)))).To(Succeed())
	body.Write(data)
	h := c.envd(sandbox)
	h.Set("Content-Type", "application/connect+json")
	code, out := c.do(http.MethodPost, "/process.Process/Start", h, &body)
	Expect(code).To(Equal(http.StatusOK), string(out))
	var events []map[string]any
	for len(out) >= 5 {
		n := binary.BigEndian.Uint32(out[1:5])
		var m map[string]any
		Expect(json.Unmarshal(out[5:5+n], &m)).To(Succeed())
		if out[0]&2 != 0 {
			return events, m
		}
		events = append(events, m)
		out = out[5+n:]
	}
	Fail("the stream ended without its end-of-stream message")
	return nil, nil
}

// startGateway runs bin/dockside-e2b on a free loopback port against the suite's API server.
func startGateway() string {
	GinkgoHelper()
	return startGatewayOn(http.DefaultTransport, "http")
}

// startGatewayOn runs bin/dockside-e2b with args, and waits until it answers through transport on scheme.
func startGatewayOn(transport http.RoundTripper, scheme string, args ...string) string {
	GinkgoHelper()
	ports, err := loopback.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	log, err := os.Create(filepath.Join(GinkgoT().TempDir(), "e2b.log"))
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(filepath.Join(agentproc.BinDir(), "dockside-e2b"), append([]string{"--kubeconfig", cp.Kubeconfig, "--listen", addr}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
	})
	url := scheme + "://" + addr
	Eventually(func() (int, error) {
		resp, err := (&http.Client{Transport: transport}).Get(url + "/health")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}).WithTimeout(30 * time.Second).Should(Equal(http.StatusNoContent))
	return url
}

var _ = Describe("the E2B gateway", func() {
	It("creates a sandbox, streams a command, writes and reads a file, and kills it, leaving nothing in Docker", func() {
		ns := newNamespace("e2b")
		apply(ns, e2bRole)
		key, err := kubectl("create", "token", "agent", "-n", ns, "--duration=1h")
		Expect(err).NotTo(HaveOccurred())
		c := e2bClient{url: startGateway(), key: strings.TrimSpace(key)}

		code, out := c.api(http.MethodPost, "/sandboxes", map[string]any{"templateID": "base", "timeout": 300, "envVars": map[string]string{"WHO": "e2b"}})
		Expect(code).To(Equal(http.StatusCreated), string(out))
		var sb struct {
			SandboxID string `json:"sandboxID"`
		}
		Expect(json.Unmarshal(out, &sb)).To(Succeed())
		Expect(field(ns, "sandbox/"+sb.SandboxID, "{.metadata.labels.e2b\\.dockside\\.dev/template}")).To(Equal("base"))

		events, end := c.start(sb.SandboxID, map[string]any{"process": map[string]any{"cmd": "/bin/sh", "args": []string{"-c", "echo hi; echo $WHO; echo oops >&2; exit 3"}}})
		Expect(end).NotTo(HaveKey("error"))
		var stdout, stderr string
		var last map[string]any
		for _, ev := range events {
			e := ev["event"].(map[string]any)
			if d, ok := e["data"].(map[string]any); ok {
				for k, v := range d {
					b, err := base64.StdEncoding.DecodeString(v.(string))
					Expect(err).NotTo(HaveOccurred())
					if k == "stdout" {
						stdout += string(b)
					} else {
						stderr += string(b)
					}
				}
			}
			last = e
		}
		Expect(events[0]["event"]).To(HaveKey("start"))
		Expect(stdout).To(Equal("hi\ne2b\n"))
		Expect(stderr).To(Equal("oops\n"))
		Expect(last).To(HaveKeyWithValue("end", And(HaveKeyWithValue("exitCode", BeEquivalentTo(3)), HaveKeyWithValue("exited", true))))

		h := c.envd(sb.SandboxID)
		h.Set("Content-Type", "application/octet-stream")
		code, out = c.do(http.MethodPost, "/files?path=/workspace/dir/hello.txt", h, strings.NewReader("hello from e2b\n"))
		Expect(code).To(Equal(http.StatusOK), string(out))
		Expect(string(out)).To(ContainSubstring(`"path":"/workspace/dir/hello.txt"`))
		code, out = c.do(http.MethodGet, "/files?path=dir/hello.txt", c.envd(sb.SandboxID), nil)
		Expect(code).To(Equal(http.StatusOK), string(out))
		Expect(string(out)).To(Equal("hello from e2b\n"), "a relative path starts at the workspace")
		code, out = c.do(http.MethodGet, "/files?path=/workspace/missing", c.envd(sb.SandboxID), nil)
		Expect(code).To(Equal(http.StatusNotFound), string(out))
		Expect(string(out)).To(ContainSubstring(`"code":404`))

		code, out = c.api(http.MethodPost, "/sandboxes/"+sb.SandboxID+"/pause", nil)
		Expect(code).To(Equal(http.StatusNoContent), string(out))
		waitFor(ns, "sandbox/"+sb.SandboxID, "jsonpath={.status.phase}=Paused", time.Minute)
		code, out = c.api(http.MethodGet, "/sandboxes/"+sb.SandboxID, nil)
		Expect(code).To(Equal(http.StatusOK), string(out))
		Expect(string(out)).To(ContainSubstring(`"state":"paused"`))
		code, out = c.api(http.MethodPost, "/sandboxes/"+sb.SandboxID+"/connect", map[string]any{"timeout": 600})
		Expect(code).To(Equal(http.StatusCreated), string(out))
		code, out = c.do(http.MethodGet, "/files?path=/workspace/dir/hello.txt", c.envd(sb.SandboxID), nil)
		Expect(code).To(Equal(http.StatusOK), string(out))
		Expect(string(out)).To(Equal("hello from e2b\n"), "the workspace outlives the pause")

		code, out = c.api(http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil)
		Expect(code).To(Equal(http.StatusNoContent), string(out))
		Eventually(func() (string, error) {
			return kubectl("get", "-n", ns, "sandboxes", "-o", "name")
		}).WithTimeout(90 * time.Second).Should(BeEmpty())
		Eventually(func() []string { return heldInDocker(ns, sb.SandboxID) }).WithTimeout(30 * time.Second).Should(BeEmpty())
	})
})

// e2bTenant makes a namespace allowed to use the gateway and starts the gateway, with a key of that namespace.
func e2bTenant() (e2bClient, string) {
	GinkgoHelper()
	ns := newNamespace("e2b")
	apply(ns, e2bRole)
	key, err := kubectl("create", "token", "agent", "-n", ns, "--duration=1h")
	Expect(err).NotTo(HaveOccurred())
	return e2bClient{url: startGateway(), key: strings.TrimSpace(key)}, ns
}

// e2bSandbox creates a sandbox of the base template through a gateway of a namespace of its own, and kills it
// when the spec ends.
func e2bSandbox() (e2bClient, string, string) {
	GinkgoHelper()
	c, ns := e2bTenant()
	code, out := c.api(http.MethodPost, "/sandboxes", map[string]any{"templateID": "base", "timeout": 300})
	Expect(code).To(Equal(http.StatusCreated), string(out))
	var sb struct {
		SandboxID string `json:"sandboxID"`
	}
	Expect(json.Unmarshal(out, &sb)).To(Succeed())
	DeferCleanup(func() {
		code, out := c.api(http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil)
		Expect(code).To(Equal(http.StatusNoContent), string(out))
		Eventually(func() []string { return heldInDocker(ns, sb.SandboxID) }).WithTimeout(90 * time.Second).Should(BeEmpty())
	})
	return c, ns, sb.SandboxID
}

// envdRequest is a Connect request to the sandbox's envd as the SDK sends it.
func envdRequest[T any](c e2bClient, sandbox string, msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Set("E2b-Sandbox-Id", sandbox)
	req.Header().Set("X-Access-Token", c.key)
	return req
}

var _ = Describe("the E2B gateway's envd", func() {
	It("serves the filesystem service and multipart uploads through the files subresource", func() {
		c, _, id := e2bSandbox()
		fsc := filesystemconnect.NewFilesystemClient(http.DefaultClient, c.url, connect.WithProtoJSON())
		bg := context.Background()

		made, err := fsc.MakeDir(bg, envdRequest(c, id, &filesystem.MakeDirRequest{Path: "/workspace/d/e"}))
		Expect(err).NotTo(HaveOccurred())
		Expect(made.Msg.GetEntry().GetType()).To(Equal(filesystem.FileType_FILE_TYPE_DIRECTORY))
		_, err = fsc.MakeDir(bg, envdRequest(c, id, &filesystem.MakeDirRequest{Path: "/workspace/d/e"}))
		Expect(connect.CodeOf(err)).To(Equal(connect.CodeAlreadyExists))

		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		part, err := mw.CreateFormFile("file", "/workspace/d/a.txt")
		Expect(err).NotTo(HaveOccurred())
		_, _ = part.Write([]byte("abc"))
		Expect(mw.Close()).To(Succeed())
		h := c.envd(id)
		h.Set("Content-Type", mw.FormDataContentType())
		code, out := c.do(http.MethodPost, "/files", h, &body)
		Expect(code).To(Equal(http.StatusOK), string(out))

		listed, err := fsc.ListDir(bg, envdRequest(c, id, &filesystem.ListDirRequest{Path: "/workspace", Depth: 2}))
		Expect(err).NotTo(HaveOccurred())
		var paths []string
		for _, e := range listed.Msg.GetEntries() {
			paths = append(paths, e.GetPath())
		}
		Expect(paths).To(ContainElements("/workspace/d", "/workspace/d/a.txt", "/workspace/d/e"))
		shallow, err := fsc.ListDir(bg, envdRequest(c, id, &filesystem.ListDirRequest{Path: "/workspace", Depth: 1}))
		Expect(err).NotTo(HaveOccurred())
		Expect(shallow.Msg.GetEntries()).NotTo(ContainElement(HaveField("Path", "/workspace/d/a.txt")))

		moved, err := fsc.Move(bg, envdRequest(c, id, &filesystem.MoveRequest{Source: "/workspace/d/a.txt", Destination: "/workspace/d/b.txt"}))
		Expect(err).NotTo(HaveOccurred())
		Expect(moved.Msg.GetEntry().GetPath()).To(Equal("/workspace/d/b.txt"))
		st, err := fsc.Stat(bg, envdRequest(c, id, &filesystem.StatRequest{Path: "d/b.txt"}))
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Msg.GetEntry().GetSize()).To(BeEquivalentTo(3))
		Expect(st.Msg.GetEntry().GetType()).To(Equal(filesystem.FileType_FILE_TYPE_FILE))
		_, err = fsc.Stat(bg, envdRequest(c, id, &filesystem.StatRequest{Path: "/workspace/d/a.txt"}))
		Expect(connect.CodeOf(err)).To(Equal(connect.CodeNotFound))

		_, err = fsc.Remove(bg, envdRequest(c, id, &filesystem.RemoveRequest{Path: "/workspace/d"}))
		Expect(err).NotTo(HaveOccurred())
		_, err = fsc.Stat(bg, envdRequest(c, id, &filesystem.StatRequest{Path: "/workspace/d"}))
		Expect(connect.CodeOf(err)).To(Equal(connect.CodeNotFound))

		// The watchers look through the files subresource (docs/e2b.md, "Watching directories").
		_, err = fsc.MakeDir(bg, envdRequest(c, id, &filesystem.MakeDirRequest{Path: "/workspace/w"}))
		Expect(err).NotTo(HaveOccurred())
		polled, err := fsc.CreateWatcher(bg, envdRequest(c, id, &filesystem.CreateWatcherRequest{Path: "/workspace/w"}))
		Expect(err).NotTo(HaveOccurred())
		wctx, stop := context.WithTimeout(bg, 2*time.Minute)
		defer stop()
		watch, err := fsc.WatchDir(wctx, envdRequest(c, id, &filesystem.WatchDirRequest{Path: "/workspace/w", Recursive: true}))
		Expect(err).NotTo(HaveOccurred())
		Expect(watch.Receive()).To(BeTrue(), "%v", watch.Err())
		Expect(watch.Msg().GetStart()).NotTo(BeNil())
		h = c.envd(id)
		h.Set("Content-Type", "application/octet-stream")
		code, out = c.do(http.MethodPost, "/files?path=/workspace/w/new.txt", h, strings.NewReader("hello"))
		Expect(code).To(Equal(http.StatusOK), string(out))
		// The data plane writes a temporary file and renames it over new.txt: a look may see either.
		var seen []string
		for !slices.Contains(seen, "EVENT_TYPE_CREATE new.txt") && watch.Receive() {
			if ev := watch.Msg().GetFilesystem(); ev != nil {
				seen = append(seen, ev.GetType().String()+" "+ev.GetName())
			}
		}
		Expect(seen).To(ContainElement("EVENT_TYPE_CREATE new.txt"), "%v", watch.Err())
		stop()
		Eventually(func() []string {
			r, err := fsc.GetWatcherEvents(bg, envdRequest(c, id, &filesystem.GetWatcherEventsRequest{WatcherId: polled.Msg.GetWatcherId()}))
			Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, ev := range r.Msg.GetEvents() {
				names = append(names, ev.GetType().String()+" "+ev.GetName())
			}
			return names
		}).Should(ContainElement("EVENT_TYPE_CREATE new.txt"))
		_, err = fsc.RemoveWatcher(bg, envdRequest(c, id, &filesystem.RemoveWatcherRequest{WatcherId: polled.Msg.GetWatcherId()}))
		Expect(err).NotTo(HaveOccurred())
	})

	It("runs a shell on a terminal of the size asked, resizes it and selects it by tag", func() {
		c, _, id := e2bSandbox()
		pc := processconnect.NewProcessClient(http.DefaultClient, c.url, connect.WithProtoJSON())
		bg, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		sh, err := pc.Start(bg, envdRequest(c, id, &process.StartRequest{Process: &process.ProcessConfig{Cmd: "/bin/sh"},
			Pty: &process.PTY{Size: &process.PTY_Size{Cols: 100, Rows: 30}}, Tag: ptr.To("term")}))
		Expect(err).NotTo(HaveOccurred())
		Expect(sh.Receive()).To(BeTrue(), "%v", sh.Err())
		Expect(sh.Msg().GetEvent().GetStart().GetPid()).NotTo(BeZero())
		screen := make(chan string, 256)
		ended := make(chan *process.ProcessEvent_EndEvent, 1)
		go func() {
			defer GinkgoRecover()
			for sh.Receive() {
				ev := sh.Msg().GetEvent()
				Expect(ev.GetData().GetStdout()).To(BeEmpty(), "a terminal's output is pty data")
				if b := ev.GetData().GetPty(); len(b) > 0 {
					screen <- string(b)
				}
				if e := ev.GetEnd(); e != nil {
					ended <- e
				}
			}
		}()
		var shown strings.Builder
		shows := func(want string) {
			GinkgoHelper()
			Eventually(func() string {
				for {
					select {
					case b := <-screen:
						shown.WriteString(b)
					default:
						return shown.String()
					}
				}
			}).WithTimeout(30 * time.Second).Should(ContainSubstring(want))
		}
		byTag := &process.ProcessSelector{Selector: &process.ProcessSelector_Tag{Tag: "term"}}
		typing := func(text string) {
			GinkgoHelper()
			_, err := pc.SendInput(bg, envdRequest(c, id, &process.SendInputRequest{Process: byTag, Input: &process.ProcessInput{Input: &process.ProcessInput_Pty{Pty: []byte(text)}}}))
			Expect(err).NotTo(HaveOccurred())
		}
		typing("stty size\n")
		shows("30 100")
		_, err = pc.Update(bg, envdRequest(c, id, &process.UpdateRequest{Process: byTag, Pty: &process.PTY{Size: &process.PTY_Size{Cols: 120, Rows: 40}}}))
		Expect(err).NotTo(HaveOccurred())
		typing("stty size\n")
		shows("40 120")
		listed, err := pc.List(bg, envdRequest(c, id, &process.ListRequest{}))
		Expect(err).NotTo(HaveOccurred())
		Expect(listed.Msg.GetProcesses()).To(ContainElement(HaveField("Tag", HaveValue(Equal("term")))))
		typing("exit 7\n")
		Eventually(ended).WithTimeout(30 * time.Second).Should(Receive(HaveField("ExitCode", BeEquivalentTo(7))))
	})

	It("feeds a process its input, lists it and kills it with a signal", func() {
		c, _, id := e2bSandbox()
		pc := processconnect.NewProcessClient(http.DefaultClient, c.url, connect.WithProtoJSON())
		bg, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()

		cat, err := pc.Start(bg, envdRequest(c, id, &process.StartRequest{Process: &process.ProcessConfig{Cmd: "cat"}, Stdin: ptr.To(true)}))
		Expect(err).NotTo(HaveOccurred())
		Expect(cat.Receive()).To(BeTrue(), "%v", cat.Err())
		pid := cat.Msg().GetEvent().GetStart().GetPid()
		Expect(pid).NotTo(BeZero())
		listed, err := pc.List(bg, envdRequest(c, id, &process.ListRequest{}))
		Expect(err).NotTo(HaveOccurred())
		Expect(listed.Msg.GetProcesses()).To(ContainElement(HaveField("Pid", pid)))
		sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
		_, err = pc.SendInput(bg, envdRequest(c, id, &process.SendInputRequest{Process: sel, Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("ping\n")}}}))
		Expect(err).NotTo(HaveOccurred())
		_, err = pc.CloseStdin(bg, envdRequest(c, id, &process.CloseStdinRequest{Process: sel}))
		Expect(err).NotTo(HaveOccurred())
		var out string
		var end *process.ProcessEvent_EndEvent
		for cat.Receive() {
			ev := cat.Msg().GetEvent()
			out += string(ev.GetData().GetStdout())
			if ev.GetEnd() != nil {
				end = ev.GetEnd()
			}
		}
		Expect(cat.Err()).NotTo(HaveOccurred())
		Expect(out).To(Equal("ping\n"))
		Expect(end).To(HaveField("ExitCode", BeEquivalentTo(0)))

		sleep, err := pc.Start(bg, envdRequest(c, id, &process.StartRequest{Process: &process.ProcessConfig{Cmd: "sleep", Args: []string{"300"}}}))
		Expect(err).NotTo(HaveOccurred())
		Expect(sleep.Receive()).To(BeTrue(), "%v", sleep.Err())
		spid := sleep.Msg().GetEvent().GetStart().GetPid()
		_, err = pc.SendSignal(bg, envdRequest(c, id, &process.SendSignalRequest{
			Process: &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: spid}}, Signal: process.Signal_SIGNAL_SIGKILL}))
		Expect(err).NotTo(HaveOccurred())
		end = nil
		for sleep.Receive() {
			if e := sleep.Msg().GetEvent().GetEnd(); e != nil {
				end = e
			}
		}
		Expect(sleep.Err()).NotTo(HaveOccurred())
		Expect(end).NotTo(BeNil(), "the killed process's stream ends with its end")
		Expect(end.GetExitCode()).NotTo(BeZero())
	})
})

var _ = Describe("the E2B gateway and a warm pool", func() {
	It("claims a warm Sandbox of the template's pool, runs in it, and kills it with its claim", func() {
		c, ns := e2bTenant()
		apply(ns, "apiVersion: dockside.dev/v1alpha1\nkind: SandboxWarmPool\nmetadata: {name: base-pool}\nspec: {templateRef: {name: base}, replicas: 1}\n")
		DeferCleanup(func() {
			_, err := kubectl("delete", "-n", ns, "sandboxwarmpool", "base-pool", "--timeout=90s")
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() (string, error) {
				return kubectl("get", "-n", ns, "sandboxes", "-o", "name")
			}).WithTimeout(90 * time.Second).Should(BeEmpty())
		})
		waitFor(ns, "sandboxwarmpool/base-pool", "condition=Ready", 3*time.Minute)

		code, out := c.api(http.MethodPost, "/sandboxes", map[string]any{"templateID": "base", "timeout": 120, "envVars": map[string]string{"WHO": "warm"}})
		Expect(code).To(Equal(http.StatusCreated), string(out))
		var sb struct {
			SandboxID string `json:"sandboxID"`
		}
		Expect(json.Unmarshal(out, &sb)).To(Succeed())
		Expect(sb.SandboxID).To(HavePrefix("base-pool-"), "a member of the pool, claimed")
		claim := field(ns, "sandbox/"+sb.SandboxID, "{.metadata.labels.dockside\\.dev/claim}")
		Expect(claim).NotTo(BeEmpty())
		Expect(field(ns, "sandboxclaim/"+claim, "{.status.start}")).To(Equal("Warm"))

		events, _ := c.start(sb.SandboxID, map[string]any{"process": map[string]any{"cmd": "/bin/sh", "args": []string{"-c", "echo $WHO"}}})
		var stdout string
		for _, ev := range events {
			if d, ok := ev["event"].(map[string]any)["data"].(map[string]any); ok {
				b, err := base64.StdEncoding.DecodeString(d["stdout"].(string))
				Expect(err).NotTo(HaveOccurred())
				stdout += string(b)
			}
		}
		Expect(stdout).To(Equal("warm\n"), "the claim's env reaches the command")

		code, out = c.api(http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil)
		Expect(code).To(Equal(http.StatusNoContent), string(out))
		Eventually(func() (string, error) {
			return kubectl("get", "-n", ns, "sandboxclaims", "-o", "name")
		}).WithTimeout(90 * time.Second).Should(BeEmpty())
		Eventually(func() []string { return heldInDocker(ns, sb.SandboxID) }).WithTimeout(90 * time.Second).Should(BeEmpty())
	})
})
