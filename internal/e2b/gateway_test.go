package e2b

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process/processconnect"
)

// sandboxes is where the fake API server's Sandboxes are read.
const sandboxes = "/apis/dockside.dev/v1alpha1/namespaces/ns-a/sandboxes/"

// services is where the fake API server's SandboxServices are read.
const services = "/apis/dockside.dev/v1alpha1/namespaces/ns-a/sandboxservices/"

// serviceFixtures are the SandboxServices of the fake API server, by name: db declares 6379 and 8080 (TCP)
// and 5353 (UDP), cache declares 6379 too.
var serviceFixtures = map[string]string{
	"db": `{"apiVersion":"dockside.dev/v1alpha1","kind":"SandboxService","metadata":{"namespace":"ns-a","name":"db"},` +
		`"spec":{"image":"i","ports":[{"port":6379,"protocol":"TCP"},{"port":8080},{"port":5353,"protocol":"UDP"}]}}`,
	"cache": `{"apiVersion":"dockside.dev/v1alpha1","kind":"SandboxService","metadata":{"namespace":"ns-a","name":"cache"},` +
		`"spec":{"image":"i","ports":[{"port":6379}]}}`,
}

// fixtures are the Sandboxes of the fake API server, by name: one to reach plainly, one whose ports take a
// traffic access token ("tok"), one created secure, one paused, one with services (one of them gone).
var fixtures = map[string]string{
	"web":    sandboxJSON("web", `{}`, ""),
	"locked": sandboxJSON("locked", `{"`+AnnotationTrafficToken+`":"tok"}`, ""),
	"secure": sandboxJSON("secure", `{"`+AnnotationSecure+`":"true"}`, ""),
	"sleepy": sandboxJSON("sleepy", `{}`, `"lifecycle":"Paused",`),
	"withdb": sandboxJSON("withdb", `{}`, `"services":["gone","db","cache"],`),
}

func sandboxJSON(name, annotations, spec string) string {
	return `{"apiVersion":"dockside.dev/v1alpha1","kind":"Sandbox","metadata":{"namespace":"ns-a","name":"` + name +
		`","annotations":` + annotations + `},"spec":{` + spec + `"image":"i","commandEnv":[{"name":"A","value":"1"}]}}`
}

// fakeAPI is an API server that knows one key (of ServiceAccount ns-a/agent), the Sandboxes of fixtures, and
// one background process of sandbox sbx, which wrote "hi\n" and exited 3.
func fakeAPI(t *testing.T) (*httptest.Server, *[]string) {
	t.Helper()
	var seen []string
	const procs = "/apis/subresources.dockside.dev/v1alpha1/namespaces/ns-a/sandboxes/sbx/processes"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer key-a" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"kind":"Status","code":401,"message":"Unauthorized"}`)
			return
		}
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews":
			_, _ = io.WriteString(w, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","status":{"userInfo":{"username":"system:serviceaccount:ns-a:agent"}}}`)
		case r.Method == http.MethodPost && r.URL.Path == procs:
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{}`)
		case strings.HasSuffix(r.URL.Path, "/stdout"):
			w.Header().Set("X-Dockside-Output-Start", r.URL.Query().Get("from"))
			if r.URL.Query().Get("from") == "0" {
				_, _ = io.WriteString(w, "hi\n")
			}
		case strings.HasSuffix(r.URL.Path, "/stderr"):
			w.Header().Set("X-Dockside-Output-Start", r.URL.Query().Get("from"))
		case strings.HasPrefix(r.URL.Path, procs+"/"):
			_, _ = io.WriteString(w, `{"id":"x","running":false,"exitCode":3,"stdoutBytes":3,"stderrBytes":0}`)
		case r.URL.Path == "/api": // discovery, for the Sandboxes' REST mapping
			_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"]}`)
		case r.URL.Path == "/apis":
			_, _ = io.WriteString(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"dockside.dev","versions":[{"groupVersion":"dockside.dev/v1alpha1","version":"v1alpha1"}],"preferredVersion":{"groupVersion":"dockside.dev/v1alpha1","version":"v1alpha1"}}]}`)
		case r.URL.Path == "/apis/dockside.dev/v1alpha1":
			_, _ = io.WriteString(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"dockside.dev/v1alpha1","resources":[{"name":"sandboxes","singularName":"sandbox","namespaced":true,"kind":"Sandbox","verbs":["get","list"]},{"name":"checkpoints","singularName":"checkpoint","namespaced":true,"kind":"Checkpoint","verbs":["get","list","create","delete"]},{"name":"sandboxservices","singularName":"sandboxservice","namespaced":true,"kind":"SandboxService","verbs":["get"]}]}`)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, services) && serviceFixtures[strings.TrimPrefix(r.URL.Path, services)] != "":
			_, _ = io.WriteString(w, serviceFixtures[strings.TrimPrefix(r.URL.Path, services)])
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, sandboxes) && fixtures[strings.TrimPrefix(r.URL.Path, sandboxes)] != "":
			_, _ = io.WriteString(w, fixtures[strings.TrimPrefix(r.URL.Path, sandboxes)])
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","code":404,"message":"not here"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func newTestGateway(t *testing.T, host string) *Gateway {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{API: &rest.Config{Host: host, Username: "admin", Password: "dropped"}, Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// startProcess starts cmd through the gateway at gw as E2B's SDK does, in Sandbox sbx with key-a, with
// header's fields added to the call's. The call ends with the test, at the latest.
func startProcess(t *testing.T, gw string, header http.Header, cmd string, args ...string) *connect.ServerStreamForClient[process.StartResponse] {
	t.Helper()
	cl := processconnect.NewProcessClient(http.DefaultClient, gw, connect.WithProtoJSON())
	req := connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{Cmd: cmd, Args: args}})
	maps.Copy(req.Header(), header)
	req.Header().Set("E2b-Sandbox-Id", "sbx")
	req.Header().Set("X-Access-Token", "key-a")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	stream, err := cl.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

func TestErrorsHaveE2BShape(t *testing.T) {
	g := NewWithT(t)
	api, _ := fakeAPI(t)
	gw := httptest.NewServer(newTestGateway(t, api.URL))
	defer gw.Close()
	for _, c := range []struct {
		method, path, key string
		code              int
		says              string
	}{
		{http.MethodGet, "/sandboxes", "", http.StatusUnauthorized, "missing key"},
		{http.MethodGet, "/sandboxes", "wrong", http.StatusUnauthorized, "not a valid Kubernetes token"},
		{http.MethodPost, "/templates", "key-a", http.StatusNotImplemented, "not supported"},
		{http.MethodGet, "/sandboxes/x/logs", "key-a", http.StatusNotImplemented, "not supported"},
		{http.MethodDelete, "/templates/base", "key-a", http.StatusNotImplemented, "no snapshot of the E2B gateway"},
		{http.MethodGet, "/sandboxes/nope", "key-a", http.StatusNotFound, `sandbox "nope" not found`},
	} {
		req, _ := http.NewRequest(c.method, gw.URL+c.path, nil)
		if c.key != "" {
			req.Header.Set("X-API-Key", c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		var body map[string]any
		g.Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(c.code), c.path)
		g.Expect(body).To(HaveKeyWithValue("code", BeEquivalentTo(c.code)), c.path)
		g.Expect(body["message"]).To(ContainSubstring(c.says), c.path)
	}
}

func TestCreateRefusesBadBodiesBeforeTouchingAnything(t *testing.T) {
	g := NewWithT(t)
	api, seen := fakeAPI(t)
	gw := httptest.NewServer(newTestGateway(t, api.URL))
	defer gw.Close()
	for body, says := range map[string]string{
		`{"templateID":`:                                         "not the JSON",
		`{"templateID":"t","autoPause":true}`:                    "autoPause is not supported",
		`{"templateID":"t","timeout":0}`:                         "at least 1 second",
		`{"templateID":"t","timeout":999999999}`:                 "7 days",
		`{"templateID":"t","network":{"denyOut":["0.0.0.0/0"]}}`: "network rules",
	} {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/sandboxes", strings.NewReader(body))
		req.Header.Set("X-API-Key", "key-a")
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		var e apiError
		g.Expect(json.NewDecoder(resp.Body).Decode(&e)).To(Succeed())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), body)
		g.Expect(e.Code).To(Equal(http.StatusBadRequest))
		g.Expect(e.Message).To(ContainSubstring(says), body)
	}
	g.Expect(given(json.RawMessage(` [ ] `))).To(BeFalse())
	g.Expect(given(json.RawMessage(`null`))).To(BeFalse())
	g.Expect(given(json.RawMessage(`{"allowOut":["a"]}`))).To(BeTrue())
	for _, s := range *seen {
		g.Expect(s).To(HavePrefix("POST /apis/authentication.k8s.io/"), "only the key was checked")
	}
}

func TestHealthAnswersWithoutAKey(t *testing.T) {
	g := NewWithT(t)
	rec := httptest.NewRecorder()
	newTestGateway(t, "http://127.0.0.1:1").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	g.Expect(rec.Code).To(Equal(http.StatusNoContent))
}

func TestDetailFieldsAreTheOnesTheSDKReads(t *testing.T) {
	g := NewWithT(t)
	start := metav1.NewTime(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "e2b-abc", Labels: map[string]string{LabelTemplate: "base"},
			Annotations: map[string]string{AnnotationMetadata: `{"user":"ann"}`}},
		Spec: dsv1alpha1.SandboxSpec{ActiveDeadlineSeconds: ptr.To[int64](300), Lifecycle: dsv1alpha1.LifecyclePaused,
			Resources: dsv1alpha1.Resources{CPU: resource.MustParse("1500m"), Memory: resource.MustParse("512Mi")}},
		Status: dsv1alpha1.SandboxStatus{StartTime: &start},
	}
	data, err := json.Marshal(detailOf(sbx))
	g.Expect(err).NotTo(HaveOccurred())
	var m map[string]any
	g.Expect(json.Unmarshal(data, &m)).To(Succeed())
	g.Expect(m).To(HaveKeyWithValue("sandboxID", "e2b-abc"))
	g.Expect(m).To(HaveKeyWithValue("templateID", "base"))
	g.Expect(m).To(HaveKeyWithValue("clientID", clientID))
	g.Expect(m).To(HaveKeyWithValue("envdVersion", envdVersion))
	g.Expect(m).To(HaveKeyWithValue("state", "paused"))
	g.Expect(m).To(HaveKeyWithValue("startedAt", "2026-12-07T10:00:00Z"))
	g.Expect(m).To(HaveKeyWithValue("endAt", "2026-12-07T10:05:00Z"))
	g.Expect(m).To(HaveKeyWithValue("cpuCount", BeEquivalentTo(2)))
	g.Expect(m).To(HaveKeyWithValue("memoryMB", BeEquivalentTo(512)))
	g.Expect(m).To(HaveKey("diskSizeMB"))
	g.Expect(m).To(HaveKeyWithValue("metadata", map[string]any{"user": "ann"}))
}

func TestDeadlineCountsFromTheStart(t *testing.T) {
	g := NewWithT(t)
	d, err := deadlineFor(time.Now().Add(-100*time.Second), 60)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d).To(BeNumerically("~", 161, 5))
	_, err = deadlineFor(time.Now().Add(-7*24*time.Hour), 60)
	g.Expect(err).To(MatchError(ContainSubstring("7 days")))
}

func TestSandboxIsNamedByHeaderOrHost(t *testing.T) {
	g := NewWithT(t)
	r := httptest.NewRequest(http.MethodGet, "/files", nil)
	r.Header.Set("E2b-Sandbox-Id", "e2b-x1")
	g.Expect(sandboxIDOf(r)).To(Equal("e2b-x1"))
	r = r.WithContext(context.WithValue(r.Context(), hostSandboxKey{}, "e2b-x2"))
	g.Expect(sandboxIDOf(r)).To(Equal("e2b-x2"), "the host's sandbox (routeHost) before the header's")
	r = httptest.NewRequest(http.MethodGet, "/files", nil)
	r.Host = "49983-e2b-x3.sandbox.example"
	g.Expect(sandboxIDOf(r)).To(BeEmpty(), "a host is read only under the gateway's domain, by routeHost")
}

func TestCommandLinesReadBack(t *testing.T) {
	g := NewWithT(t)
	cfg := &process.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", "echo $A"}, Envs: map[string]string{"A": "1", "B": "x=y"}, Cwd: ptr.To("/tmp")}
	argv := commandOf(cfg)
	g.Expect(argv).To(Equal([]string{"/bin/sh", "-c", cdScript, "/tmp", "env", "A=1", "B=x=y", "/bin/bash", "-l", "-c", "echo $A"}))
	back := configOf(argv)
	g.Expect(back.GetCmd()).To(Equal("/bin/bash"))
	g.Expect(back.GetArgs()).To(Equal(cfg.Args))
	g.Expect(back.GetEnvs()).To(Equal(cfg.Envs))
	g.Expect(back.GetCwd()).To(Equal("/tmp"))
	g.Expect(commandOf(&process.ProcessConfig{Cmd: "true"})).To(Equal([]string{"true"}))
}

func TestStartStreamsOutputAndEndThroughTheProcessesSubresource(t *testing.T) {
	g := NewWithT(t)
	api, seen := fakeAPI(t)
	gw := httptest.NewServer(newTestGateway(t, api.URL))
	defer gw.Close()
	stream := startProcess(t, gw.URL, nil, "echo", "hi")
	var pid uint32
	var out bytes.Buffer
	var end *process.ProcessEvent_EndEvent
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		switch {
		case ev.GetStart() != nil:
			pid = ev.GetStart().GetPid()
		case ev.GetData() != nil:
			out.Write(ev.GetData().GetStdout())
		case ev.GetEnd() != nil:
			end = ev.GetEnd()
		}
	}
	g.Expect(stream.Err()).NotTo(HaveOccurred())
	g.Expect(pid).NotTo(BeZero())
	g.Expect(out.String()).To(Equal("hi\n"))
	g.Expect(end).NotTo(BeNil())
	g.Expect(end.GetExitCode()).To(BeEquivalentTo(3))
	g.Expect(end.GetExited()).To(BeTrue())
	g.Expect(end.GetStatus()).To(Equal("exit status 3"))
	g.Expect(*seen).To(ContainElement(And(HavePrefix("POST /apis/subresources.dockside.dev/v1alpha1/namespaces/ns-a/sandboxes/sbx/processes?"),
		ContainSubstring("id="+processID(pid)), ContainSubstring("command=echo&command=hi"))))
}

// TestConnectEnvelopes reads a Start call's answer as bytes: JSON messages in Connect's 5-byte envelopes, then
// the end-of-stream message (flag 2), as E2B's SDKs read it over HTTP/1.1.
func TestConnectEnvelopes(t *testing.T) {
	g := NewWithT(t)
	api, _ := fakeAPI(t)
	gw := httptest.NewServer(newTestGateway(t, api.URL))
	defer gw.Close()
	msg := []byte(`{"process":{"cmd":"echo","args":["hi"]}}`)
	var body bytes.Buffer
	body.WriteByte(0)
	_ = binary.Write(&body, binary.BigEndian, uint32(len(msg)))
	body.Write(msg)
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/process.Process/Start", &body)
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("E2b-Sandbox-Id", "sbx")
	req.Header.Set("X-Access-Token", "key-a")
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/connect+json"))
	var flags []byte
	var events []map[string]any
	for {
		head := make([]byte, 5)
		if _, err := io.ReadFull(resp.Body, head); err != nil {
			break
		}
		data := make([]byte, binary.BigEndian.Uint32(head[1:]))
		_, err := io.ReadFull(resp.Body, data)
		g.Expect(err).NotTo(HaveOccurred())
		flags = append(flags, head[0])
		var m map[string]any
		g.Expect(json.Unmarshal(data, &m)).To(Succeed())
		events = append(events, m)
	}
	g.Expect(flags).To(Equal([]byte{0, 0, 0, 2}))
	g.Expect(events[0]).To(HaveKeyWithValue("event", HaveKey("start")))
	g.Expect(events[1]).To(HaveKeyWithValue("event", HaveKeyWithValue("data", HaveKeyWithValue("stdout", "aGkK"))))
	g.Expect(events[2]).To(HaveKeyWithValue("event", HaveKeyWithValue("end", And(HaveKeyWithValue("exitCode", BeEquivalentTo(3)), HaveKeyWithValue("exited", true)))))
	g.Expect(events[3]).To(BeEmpty(), "a clean end of stream carries no error")
}

func TestEnvdWithoutSandboxOrKeyIsRefusedTheConnectWay(t *testing.T) {
	g := NewWithT(t)
	api, _ := fakeAPI(t)
	gw := httptest.NewServer(newTestGateway(t, api.URL))
	defer gw.Close()
	cl := processconnect.NewProcessClient(http.DefaultClient, gw.URL, connect.WithProtoJSON())
	_, err := cl.List(context.Background(), connect.NewRequest(&process.ListRequest{}))
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeInvalidArgument))
	req := connect.NewRequest(&process.ListRequest{})
	req.Header().Set("E2b-Sandbox-Id", "sbx")
	_, err = cl.List(context.Background(), req)
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeUnauthenticated))
	upd := connect.NewRequest(&process.UpdateRequest{})
	_, err = cl.Update(context.Background(), upd)
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeInvalidArgument), "no sandbox named")
}
