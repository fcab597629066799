package mcpserver

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestToolsListed(t *testing.T) {
	h := newHarness(t)
	res, err := h.session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	want := "checkpoint create_sandbox delete_sandbox list_files read_file run_command run_python write_file"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("tools: %s, want %s", got, want)
	}
}

func TestRefusalsNameTheRule(t *testing.T) {
	h := newHarness(t, sandbox("other-image", "dockside.dev/redis:local"))
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"create_sandbox", map[string]any{"image": "alpine:latest"}, `refused: image "alpine:latest" is not one this server may run (--image: dockside.dev/python:local, dockside.dev/busybox:local)`},
		{"create_sandbox", map[string]any{"image": testImage, "namespace": "kube-system"}, `refused: namespace "kube-system" is not this server's; it is confined to namespace "team" (--namespace)`},
		{"create_sandbox", map[string]any{"image": testImage, "network": "Unrestricted"}, `refused: network "Unrestricted": this server uses Sandboxes of network None or Isolated only`},
		{"run_command", map[string]any{"sandbox": "x", "namespace": "other", "command": "true"}, `refused: namespace "other" is not this server's`},
		{"run_command", map[string]any{"sandbox": "other-image", "command": "true"}, `refused: Sandbox "other-image" runs image "dockside.dev/redis:local", not one this server may use (--image:`},
		{"read_file", map[string]any{"sandbox": "other-image", "path": "/etc/passwd"}, `refused: Sandbox "other-image" runs image`},
		{"delete_sandbox", map[string]any{"sandbox": "other-image"}, `refused: Sandbox "other-image" runs image`},
		{"read_file", map[string]any{"sandbox": "other-image", "path": "notes.txt"}, `path "notes.txt" is not absolute: give it from /, for example /workspace/notes.txt`},
	} {
		if got := h.call(t.Context(), c.tool, c.args, nil); !strings.Contains(got, c.want) {
			t.Errorf("%s %v: %q, want it to contain %q", c.tool, c.args, got, c.want)
		}
	}
	var list dsv1alpha1.SandboxList
	if err := h.k8s.List(t.Context(), &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("a refused call changed nothing: %d Sandboxes, %v", len(list.Items), err)
	}
	if err := h.k8s.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: "other-image"}, &dsv1alpha1.Sandbox{}); err != nil {
		t.Fatalf("the refused delete deleted: %v", err)
	}
}

// markReady plays the agent: it sets the first Sandbox named name Ready once it exists.
func markReady(ctx context.Context, t *testing.T, c client.Client, name string) {
	for ctx.Err() == nil {
		sbx := &dsv1alpha1.Sandbox{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: name}, sbx); err == nil {
			sbx.Status.Phase = dsv1alpha1.SandboxRunning
			meta.SetStatusCondition(&sbx.Status.Conditions, metav1.Condition{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Running", Message: "running"})
			if err := c.Status().Update(ctx, sbx); err != nil {
				t.Errorf("marking Ready: %v", err)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCreateSandboxWithLimitsWaitsUntilReady(t *testing.T) {
	h := newHarness(t)
	go markReady(t.Context(), t, h.k8s, "py")
	var out sandboxOutput
	h.mustCall("create_sandbox", map[string]any{"name": "py", "image": testImage, "cpu": "500m", "memory": "256Mi", "pids": 64, "workspace_size": "1Gi", "network": "None", "runtime": "gVisor"}, &out)
	if out != (sandboxOutput{Name: "py", Namespace: testNS, Image: testImage, Phase: "Running", Runtime: "gVisor"}) {
		t.Fatalf("output %+v", out)
	}
	sbx := &dsv1alpha1.Sandbox{}
	if err := h.k8s.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: "py"}, sbx); err != nil {
		t.Fatal(err)
	}
	r := sbx.Spec.Resources
	if r.CPU.String() != "500m" || r.Memory.String() != "256Mi" || r.Pids != 64 || sbx.Spec.Workspace.Size.String() != "1Gi" || sbx.Spec.Network.Mode != dsv1alpha1.NetworkNone || sbx.Spec.Runtime != dsv1alpha1.RuntimeGVisor {
		t.Fatalf("spec %+v", sbx.Spec)
	}
	if msg := h.call(t.Context(), "create_sandbox", map[string]any{"name": "bad", "image": testImage, "memory": "lots"}, nil); msg != `memory "lots" is not a quantity like 500m, 2, 256Mi or 1Gi` {
		t.Fatalf("bad quantity: %q", msg)
	}
	if msg := h.call(t.Context(), "create_sandbox", map[string]any{"name": "bad", "image": testImage, "runtime": "kata"}, nil); msg != `runtime "kata" is not runc or gVisor` {
		t.Fatalf("unknown runtime: %q", msg)
	}
	if err := h.k8s.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: "bad"}, &dsv1alpha1.Sandbox{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused call creates nothing: %v", err)
	}
}

func TestCreateSandboxReportsWhyItCannotStart(t *testing.T) {
	h := newHarness(t)
	go func() {
		for t.Context().Err() == nil {
			sbx := &dsv1alpha1.Sandbox{}
			if h.k8s.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: "stuck"}, sbx) == nil {
				meta.SetStatusCondition(&sbx.Status.Conditions, metav1.Condition{Type: dsv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "ImageNotPresent", Message: `image "dockside.dev/busybox:local" is not on node n1`})
				_ = h.k8s.Status().Update(t.Context(), sbx)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	msg := h.call(t.Context(), "create_sandbox", map[string]any{"name": "stuck", "image": "dockside.dev/busybox:local"}, nil)
	if want := `the Sandbox stuck cannot start: ImageNotPresent: image "dockside.dev/busybox:local" is not on node n1`; msg != want {
		t.Fatalf("%q, want %q", msg, want)
	}
}

func TestRunCommandStreamsProgressAndBoundsOutput(t *testing.T) {
	h := newHarness(t, sandbox("box", testImage))
	h.dp.exec = func(ctx context.Context, command []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
		if strings.Join(command, " ") != "sh -c make test" {
			return 0, fmt.Errorf("command %q", command)
		}
		in, _ := io.ReadAll(stdin)
		fmt.Fprintf(stdout, "started with %s\n", in)
		// The first line must reach the host as progress while the command still runs.
		for len(h.progressOf("run_command")) == 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		fmt.Fprint(stdout, strings.Repeat("x", 1000)+"the end\n")
		fmt.Fprint(stderr, "FAIL\n")
		return 3, nil
	}
	var out commandOutput
	h.mustCall("run_command", map[string]any{"sandbox": "box", "command": "make test", "stdin": "input"}, &out)
	if out.ExitCode != 3 || out.Stderr != "FAIL\n" || out.TimedOut {
		t.Fatalf("output %+v", out)
	}
	want := "started with input\nxxxxxxxxxxxxx\n[... 963 bytes left out: the output was 1027 bytes, more than the 64 this server returns ...]\nxxxxxxxxxxxxxxxxxxxxxxxxthe end\n"
	if out.Stdout != want {
		t.Fatalf("stdout %q\nwant   %q", out.Stdout, want)
	}
	first := h.progressOf("run_command")[0]
	if first.Message != "started with input\n" || first.Progress != 19 {
		t.Fatalf("first progress %+v", first)
	}
}

func TestRunCommandCancelStopsTheCommand(t *testing.T) {
	h := newHarness(t, sandbox("box", testImage))
	started, stopped := make(chan struct{}), make(chan error, 1)
	h.dp.exec = func(ctx context.Context, _ []string, _ io.Reader, _, _ io.Writer) (int, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return 0, ctx.Err()
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel() // the client sends notifications/cancelled
	}()
	params := map[string]any{"sandbox": "box", "command": "sleep 3600"}
	if _, err := h.session.CallTool(ctx, toolParams("run_command", params)); err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	select {
	case err := <-stopped:
		if err == nil {
			t.Fatal("the command's context did not end")
		}
	case <-time.After(time.Minute):
		t.Fatal("cancelling the call did not end the command")
	}
}

func TestRunCommandTimeoutStopsItWith124(t *testing.T) {
	h := newHarness(t, sandbox("box", testImage))
	h.dp.exec = func(ctx context.Context, _ []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
		fmt.Fprint(stdout, "partial\n")
		<-ctx.Done()
		return 0, ctx.Err()
	}
	var out commandOutput
	h.mustCall("run_command", map[string]any{"sandbox": "box", "command": "sleep 3600", "timeout_seconds": 1}, &out)
	if out != (commandOutput{ExitCode: 124, Stdout: "partial\n", TimedOut: true}) {
		t.Fatalf("output %+v", out)
	}
}

func TestFiles(t *testing.T) {
	h := newHarness(t, sandbox("box", testImage))
	var w writeOutput
	h.mustCall("write_file", map[string]any{"sandbox": "box", "path": "/workspace/a.txt", "content": "héllo"}, &w)
	h.mustCall("write_file", map[string]any{"sandbox": "box", "path": "/workspace/b.bin", "content": "AP8B", "encoding": "base64"}, &w)
	if w != (writeOutput{Path: "/workspace/b.bin", Size: 3}) {
		t.Fatalf("write %+v", w)
	}
	var r readOutput
	h.mustCall("read_file", map[string]any{"sandbox": "box", "path": "/workspace/a.txt"}, &r)
	if r != (readOutput{Path: "/workspace/a.txt", Size: 6, Encoding: "utf-8", Content: "héllo"}) {
		t.Fatalf("read %+v", r)
	}
	h.mustCall("read_file", map[string]any{"sandbox": "box", "path": "/workspace/b.bin"}, &r)
	if r.Encoding != "base64" || r.Content != "AP8B" {
		t.Fatalf("read binary %+v", r)
	}
	var l listOutput
	h.mustCall("list_files", map[string]any{"sandbox": "box", "path": "/workspace"}, &l)
	if len(l.Entries) != 2 {
		t.Fatalf("list %+v", l)
	}
	big := strings.Repeat("y", 33)
	if msg := h.call(t.Context(), "write_file", map[string]any{"sandbox": "box", "path": "/workspace/big", "content": big}, nil); msg != "content is 33 bytes, more than the 32 write_file takes" {
		t.Fatalf("large write: %q", msg)
	}
	h.dp.files["/workspace/big"] = []byte(big)
	if msg := h.call(t.Context(), "read_file", map[string]any{"sandbox": "box", "path": "/workspace/big"}, nil); !strings.HasPrefix(msg, "/workspace/big is 33 bytes, more than the 32 read_file returns") {
		t.Fatalf("large read: %q", msg)
	}
}

func TestCheckpointWaitsUntilReady(t *testing.T) {
	h := newHarness(t, sandbox("box", testImage))
	go func() {
		for t.Context().Err() == nil {
			ckpt := &dsv1alpha1.Checkpoint{}
			if h.k8s.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: "snap"}, ckpt) == nil {
				ckpt.Status = dsv1alpha1.CheckpointStatus{Phase: dsv1alpha1.CheckpointReady, Size: "1Ki", SizeBytes: 1024, Digest: "sha256:" + strings.Repeat("a", 64)}
				_ = h.k8s.Status().Update(t.Context(), ckpt)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var out checkpointOutput
	h.mustCall("checkpoint", map[string]any{"sandbox": "box", "name": "snap", "paths": []string{"src"}}, &out)
	if out.Phase != "Ready" || out.SizeBytes != 1024 || out.Digest == "" {
		t.Fatalf("output %+v", out)
	}
	ckpt := &dsv1alpha1.Checkpoint{}
	if err := h.k8s.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: "snap"}, ckpt); err != nil || ckpt.Spec.SandboxName != "box" || ckpt.Spec.Paths[0] != "src" {
		t.Fatalf("Checkpoint %+v: %v", ckpt.Spec, err)
	}
}

func TestDeleteSandboxWaitsUntilGone(t *testing.T) {
	h := newHarness(t, sandbox("box", testImage))
	var out deleteOutput
	h.mustCall("delete_sandbox", map[string]any{"sandbox": "box"}, &out)
	if out.Deleted != "box" {
		t.Fatalf("output %+v", out)
	}
	if msg := h.call(t.Context(), "run_command", map[string]any{"sandbox": "box", "command": "true"}, nil); !strings.Contains(msg, "not found") {
		t.Fatalf("after delete: %q", msg)
	}
}

// poolObjects are templates py (of testImage) and redis (of an image not listed), both of runtime runc, and
// pools of each.
func poolObjects() []client.Object {
	tpl := func(name, image string) *dsv1alpha1.SandboxTemplate {
		return &dsv1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
			Spec: dsv1alpha1.SandboxTemplateSpec{Sandbox: dsv1alpha1.SandboxSpec{Image: image, Resources: dsv1alpha1.Resources{Pids: 32}, Runtime: dsv1alpha1.RuntimeRunc}}}
	}
	pool := func(name, tpl string) *dsv1alpha1.SandboxWarmPool {
		return &dsv1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
			Spec: dsv1alpha1.SandboxWarmPoolSpec{TemplateRef: dsv1alpha1.LocalObjectReference{Name: tpl}, Replicas: 1}}
	}
	return []client.Object{tpl("py", testImage), tpl("redis", "dockside.dev/redis:local"), tpl("unlisted", testImage),
		pool("warm", "py"), pool("redis", "redis")}
}

func TestCreateFromATemplate(t *testing.T) {
	h := newHarness(t, poolObjects()...)
	for want, args := range map[string]map[string]any{
		`refused: template "unlisted" is not one this server may create from (--template: py, redis)`: {"template": "unlisted"},
		`template redis: refused: image "dockside.dev/redis:local" is not one this server may run`:    {"template": "redis"},
		"give exactly one of image, template and pool":                                                {"template": "py", "image": testImage},
		"cpu, memory, pids, workspace_size, network and runtime are the template's":                   {"template": "py", "cpu": "2"},
		"network and runtime are the template's: give them with an image only":                        {"template": "py", "runtime": "runc"},
	} {
		if got := h.call(t.Context(), "create_sandbox", args, nil); !strings.Contains(got, want) {
			t.Errorf("%v: %q, want it to contain %q", args, got, want)
		}
	}
	var refused dsv1alpha1.SandboxList
	if err := h.k8s.List(t.Context(), &refused); err != nil || len(refused.Items) != 0 {
		t.Fatalf("refused calls create nothing: %d Sandboxes, %v", len(refused.Items), err)
	}
	go markReady(t.Context(), t, h.k8s, "from-tpl")
	var out sandboxOutput
	h.mustCall("create_sandbox", map[string]any{"name": "from-tpl", "template": "py"}, &out)
	if out != (sandboxOutput{Name: "from-tpl", Namespace: testNS, Image: testImage, Phase: "Running", Runtime: "runc"}) {
		t.Fatalf("output %+v", out)
	}
	sbx := &dsv1alpha1.Sandbox{}
	if err := h.k8s.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: "from-tpl"}, sbx); err != nil || sbx.Spec.Resources.Pids != 32 {
		t.Fatalf("the template's spec: %+v, %v", sbx.Spec, err)
	}
}

// bindClaims plays the agent for claims: it binds the first claim it finds to a new Ready Sandbox warm-0 of
// its pool, and deletes that Sandbox once the claim is gone.
func bindClaims(ctx context.Context, t *testing.T, c client.Client) {
	var claim *dsv1alpha1.SandboxClaim
	for ctx.Err() == nil && claim == nil {
		var list dsv1alpha1.SandboxClaimList
		if err := c.List(ctx, &list); err == nil && len(list.Items) > 0 {
			claim = &list.Items[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	if claim == nil {
		return
	}
	sbx := sandbox("warm-0", testImage)
	sbx.Spec.Runtime = dsv1alpha1.RuntimeRunc // as its template, py, names
	sbx.Labels = map[string]string{dsv1alpha1.LabelPool: claim.Spec.PoolRef.Name, dsv1alpha1.LabelClaim: claim.Name}
	if err := c.Create(ctx, sbx); err != nil {
		t.Errorf("binding: %v", err)
		return
	}
	markReady(ctx, t, c, sbx.Name)
	claim.Status = dsv1alpha1.SandboxClaimStatus{SandboxName: sbx.Name, Start: dsv1alpha1.ClaimWarm,
		Conditions: []metav1.Condition{{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Claimed", Message: "Ready"}}}
	if err := c.Status().Update(ctx, claim); err != nil {
		t.Errorf("binding: %v", err)
		return
	}
	for ctx.Err() == nil {
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); apierrors.IsNotFound(err) {
			_ = c.Delete(ctx, sbx)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCreateFromAPoolClaimsAndDeleteDeletesTheClaim(t *testing.T) {
	h := newHarness(t, poolObjects()...)
	for want, args := range map[string]map[string]any{
		`refused: pool "cold" is not one this server may create from (--pool: warm, redis)`:    {"pool": "cold"},
		`pool redis: refused: image "dockside.dev/redis:local" is not one this server may run`: {"pool": "redis"},
		"cpu, memory, pids, workspace_size, network and runtime are the template's":            {"pool": "warm", "memory": "1Gi"},
		"network and runtime are the template's: give them with an image only":                 {"pool": "warm", "runtime": "gVisor"},
	} {
		if got := h.call(t.Context(), "create_sandbox", args, nil); !strings.Contains(got, want) {
			t.Errorf("%v: %q, want it to contain %q", args, got, want)
		}
	}
	var refused dsv1alpha1.SandboxClaimList
	if err := h.k8s.List(t.Context(), &refused); err != nil || len(refused.Items) != 0 {
		t.Fatalf("refused calls create nothing: %d SandboxClaims, %v", len(refused.Items), err)
	}
	go bindClaims(t.Context(), t, h.k8s)
	var out sandboxOutput
	h.mustCall("create_sandbox", map[string]any{"name": "task", "pool": "warm"}, &out)
	if out != (sandboxOutput{Name: "warm-0", Namespace: testNS, Image: testImage, Phase: "Running", Runtime: "runc", Claim: "task", Start: "Warm"}) {
		t.Fatalf("output %+v", out)
	}
	var del deleteOutput
	h.mustCall("delete_sandbox", map[string]any{"sandbox": "warm-0"}, &del)
	if err := h.k8s.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: "task"}, &dsv1alpha1.SandboxClaim{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the claim is deleted with its Sandbox: %v", err)
	}
}
