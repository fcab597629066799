package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// defaultWait is how long create_sandbox, checkpoint and delete_sandbox wait when not told.
const defaultWait = 3 * time.Minute

// target names the Sandbox a tool works on.
type target struct {
	Sandbox   string `json:"sandbox" jsonschema:"the Sandbox's name"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace; only the server's own is allowed, and it is the default"`
}

type createInput struct {
	Name           string `json:"name,omitempty" jsonschema:"the new Sandbox's name (a DNS label); a generated one when empty"`
	Namespace      string `json:"namespace,omitempty" jsonschema:"the namespace; only the server's own is allowed, and it is the default"`
	Image          string `json:"image,omitempty" jsonschema:"the image, one of those the server lists in its instructions; or give template or pool"`
	Template       string `json:"template,omitempty" jsonschema:"a template the server lists, whose Sandbox spec (image, limits, network) is used as it is"`
	Pool           string `json:"pool,omitempty" jsonschema:"a warm pool the server lists: its Sandbox is taken at once (started when the pool has none ready)"`
	CPU            string `json:"cpu,omitempty" jsonschema:"CPU limit in cores, for example 500m or 2 (default 1)"`
	Memory         string `json:"memory,omitempty" jsonschema:"memory limit, for example 256Mi or 2Gi (default 512Mi)"`
	Pids           int64  `json:"pids,omitempty" jsonschema:"most processes and threads at once (default 256)"`
	WorkspaceSize  string `json:"workspace_size,omitempty" jsonschema:"size of the writable /workspace, for example 1Gi"`
	Network        string `json:"network,omitempty" jsonschema:"None (no network) or Isolated (egress only through the allowlist); Unrestricted is not offered"`
	Runtime        string `json:"runtime,omitempty" jsonschema:"the OCI runtime, with image only: runc (the host's kernel behind seccomp) or gVisor (a kernel of its own in user space, stronger isolation; but Executions and terminals are refused under it, and what a command leaves in the background is not ended with it); default: the node's, runc unless set otherwise"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait until it is Ready (default 180)"`
}

type sandboxOutput struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Image     string `json:"image"`
	Phase     string `json:"phase"`
	Runtime   string `json:"runtime,omitempty" jsonschema:"the runtime the Sandbox names, runc or gVisor; empty: the node's default"`
	Claim     string `json:"claim,omitempty" jsonschema:"the SandboxClaim that holds a Sandbox of a pool; delete_sandbox deletes it"`
	Start     string `json:"start,omitempty" jsonschema:"Warm (taken from the pool) or Cold (started for the claim)"`
}

type checkpointInput struct {
	target
	Name           string   `json:"name,omitempty" jsonschema:"the Checkpoint's name; the Sandbox's and a suffix when empty"`
	Paths          []string `json:"paths,omitempty" jsonschema:"paths inside the workspace to capture, relative to it (default: all of it)"`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty" jsonschema:"how long to wait until it is Ready (default 180)"`
}

type checkpointOutput struct {
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	Size      string `json:"size"`
	SizeBytes int64  `json:"size_bytes"`
	Digest    string `json:"digest"`
}

type deleteInput struct {
	target
	TimeoutSeconds int `json:"timeout_seconds,omitempty" jsonschema:"how long to wait until it is gone (default 180)"`
}

type deleteOutput struct {
	Deleted string `json:"deleted"`
}

func (s *Server) addSandboxTools() {
	mcp.AddTool(s.Server, &mcp.Tool{
		Name:        "create_sandbox",
		Description: "Create a Sandbox (an isolated container with a /workspace) from an allowed image with limits, an allowed template, or an allowed warm pool (ready at once), and wait until it is Ready.",
	}, s.createSandbox)
	mcp.AddTool(s.Server, &mcp.Tool{
		Name:        "checkpoint",
		Description: "Capture a Sandbox's workspace in a Checkpoint and wait until it is stored; prints its size and digest.",
	}, s.checkpoint)
	mcp.AddTool(s.Server, &mcp.Tool{
		Name:        "delete_sandbox",
		Description: "Delete a Sandbox and everything in it, and wait until it is gone.",
	}, s.deleteSandbox)
}

// sandbox reads the Sandbox a tool names, within the policy.
func (s *Server) sandbox(ctx context.Context, t target) (*dsv1alpha1.Sandbox, error) {
	ns, err := s.opts.Policy.namespace(t.Namespace)
	if err != nil {
		return nil, err
	}
	sbx := &dsv1alpha1.Sandbox{}
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.Sandbox}, sbx); err != nil {
		return nil, fmt.Errorf("reading Sandbox %s/%s: %w", ns, t.Sandbox, err)
	}
	return sbx, s.opts.Policy.sandbox(sbx)
}

func (s *Server) createSandbox(ctx context.Context, _ *mcp.CallToolRequest, in createInput) (*mcp.CallToolResult, sandboxOutput, error) {
	if in.Pool != "" {
		return s.claimSandbox(ctx, in)
	}
	sbx, err := s.sandboxFor(ctx, in)
	if err != nil {
		return nil, sandboxOutput{}, err
	}
	if err := s.opts.Client.Create(ctx, sbx); err != nil {
		return nil, sandboxOutput{}, fmt.Errorf("creating the Sandbox: %w", err)
	}
	err = s.poll(ctx, in.TimeoutSeconds, sbx, func() (bool, error) {
		if sbx.Status.Phase == dsv1alpha1.SandboxFailed {
			return false, fmt.Errorf("the Sandbox %s failed: %s", sbx.Name, standing(string(sbx.Status.Phase), sbx.Status.Conditions))
		}
		if c := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("the Sandbox %s cannot start: %s: %s", sbx.Name, c.Reason, c.Message)
		}
		return meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionReady), nil
	})
	out := sandboxOutput{Name: sbx.Name, Namespace: sbx.Namespace, Image: sbx.Spec.Image, Phase: string(sbx.Status.Phase), Runtime: string(sbx.Spec.Runtime)}
	if err != nil {
		return nil, out, timedOut(err, "Sandbox "+sbx.Name+" to be Ready (it is left as it is; delete_sandbox removes it)", standing(string(sbx.Status.Phase), sbx.Status.Conditions))
	}
	return nil, out, nil
}

// sandboxFor is the Sandbox create_sandbox asks for, of an image or a template, within the policy.
func (s *Server) sandboxFor(ctx context.Context, in createInput) (*dsv1alpha1.Sandbox, error) {
	ns, err := s.opts.Policy.namespace(in.Namespace)
	if err != nil {
		return nil, err
	}
	if err := oneSource(in); err != nil {
		return nil, err
	}
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: in.Name}}
	if in.Name == "" {
		sbx.GenerateName = "mcp-"
	}
	if in.Template != "" {
		tpl, err := s.template(ctx, ns, in.Template)
		if err != nil {
			return nil, err
		}
		sbx.Spec = *tpl.Spec.Sandbox.DeepCopy()
		s.opts.Policy.Caps.fill(&sbx.Spec)
		return sbx, s.opts.Policy.sandbox(sbx)
	}
	if err := s.opts.Policy.image(in.Image); err != nil {
		return nil, err
	}
	sbx.Spec = dsv1alpha1.SandboxSpec{Image: in.Image, Resources: dsv1alpha1.Resources{Pids: in.Pids}}
	if err := network(dsv1alpha1.NetworkMode(in.Network)); err != nil {
		return nil, err
	}
	sbx.Spec.Network.Mode = dsv1alpha1.NetworkMode(in.Network)
	if in.Runtime != "" && !slices.Contains(dsv1alpha1.Runtimes, dsv1alpha1.Runtime(in.Runtime)) {
		return nil, fmt.Errorf("runtime %q is not runc or gVisor", in.Runtime)
	}
	sbx.Spec.Runtime = dsv1alpha1.Runtime(in.Runtime)
	for _, q := range []struct {
		field, value string
		into         *resource.Quantity
	}{{"cpu", in.CPU, &sbx.Spec.Resources.CPU}, {"memory", in.Memory, &sbx.Spec.Resources.Memory}, {"workspace_size", in.WorkspaceSize, &sbx.Spec.Workspace.Size}} {
		if q.value == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.value)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not a quantity like 500m, 2, 256Mi or 1Gi", q.field, q.value)
		}
		*q.into = v
	}
	s.opts.Policy.Caps.fill(&sbx.Spec)
	return sbx, s.opts.Policy.sandbox(sbx)
}

// oneSource refuses a call that gives not exactly one of image, template and pool, or limits beside a
// template or a pool, whose spec has its own.
func oneSource(in createInput) error {
	given := 0
	for _, v := range []string{in.Image, in.Template, in.Pool} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return errors.New("give exactly one of image, template and pool")
	}
	if in.Image == "" && (in.CPU != "" || in.Memory != "" || in.Pids != 0 || in.WorkspaceSize != "" || in.Network != "" || in.Runtime != "") {
		return errors.New("cpu, memory, pids, workspace_size, network and runtime are the template's: give them with an image only")
	}
	return nil
}

// template reads a listed template, whose image the server must be allowed to run.
func (s *Server) template(ctx context.Context, ns, name string) (*dsv1alpha1.SandboxTemplate, error) {
	if err := s.opts.Policy.template(name); err != nil {
		return nil, err
	}
	tpl := &dsv1alpha1.SandboxTemplate{}
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tpl); err != nil {
		return nil, fmt.Errorf("reading SandboxTemplate %s/%s: %w", ns, name, err)
	}
	if err := s.opts.Policy.image(tpl.Spec.Sandbox.Image); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return tpl, nil
}

// claimSandbox takes a Sandbox of a listed pool with a SandboxClaim and waits until the claim is Ready: at
// once when the pool has a warm one (docs/pools.md).
func (s *Server) claimSandbox(ctx context.Context, in createInput) (*mcp.CallToolResult, sandboxOutput, error) {
	ns, err := s.opts.Policy.namespace(in.Namespace)
	if err != nil {
		return nil, sandboxOutput{}, err
	}
	if err := oneSource(in); err != nil {
		return nil, sandboxOutput{}, err
	}
	if err := s.opts.Policy.pool(in.Pool); err != nil {
		return nil, sandboxOutput{}, err
	}
	pool := &dsv1alpha1.SandboxWarmPool{}
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: in.Pool}, pool); err != nil {
		return nil, sandboxOutput{}, fmt.Errorf("reading SandboxWarmPool %s/%s: %w", ns, in.Pool, err)
	}
	tpl := &dsv1alpha1.SandboxTemplate{}
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pool.Spec.TemplateRef.Name}, tpl); err != nil {
		return nil, sandboxOutput{}, fmt.Errorf("reading SandboxTemplate %s/%s of pool %s: %w", ns, pool.Spec.TemplateRef.Name, in.Pool, err)
	}
	if err := s.opts.Policy.image(tpl.Spec.Sandbox.Image); err != nil {
		return nil, sandboxOutput{}, fmt.Errorf("pool %s: %w", in.Pool, err)
	}
	// The pool's Sandboxes are the template's: the policy judges them before one is taken.
	if err := s.opts.Policy.sandbox(&dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: tpl.Name + " (the template)"}, Spec: tpl.Spec.Sandbox}); err != nil {
		return nil, sandboxOutput{}, fmt.Errorf("pool %s: %w", in.Pool, err)
	}
	claim := &dsv1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: in.Name},
		Spec: dsv1alpha1.SandboxClaimSpec{PoolRef: dsv1alpha1.LocalObjectReference{Name: in.Pool}}}
	if in.Name == "" {
		claim.GenerateName = "mcp-"
	}
	if err := s.opts.Client.Create(ctx, claim); err != nil {
		return nil, sandboxOutput{}, fmt.Errorf("creating a SandboxClaim of pool %s: %w", in.Pool, err)
	}
	err = s.poll(ctx, in.TimeoutSeconds, claim, func() (bool, error) {
		if c := meta.FindStatusCondition(claim.Status.Conditions, dsv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("the SandboxClaim %s cannot be met: %s: %s", claim.Name, c.Reason, c.Message)
		}
		return meta.IsStatusConditionTrue(claim.Status.Conditions, dsv1alpha1.ConditionReady), nil
	})
	out := sandboxOutput{Name: claim.Status.SandboxName, Namespace: ns, Image: tpl.Spec.Sandbox.Image, Runtime: string(tpl.Spec.Sandbox.Runtime), Claim: claim.Name, Start: string(claim.Status.Start)}
	if err != nil {
		return nil, out, timedOut(err, "SandboxClaim "+claim.Name+" to be Ready (it is left as it is)", standing("", claim.Status.Conditions))
	}
	sbx := &dsv1alpha1.Sandbox{}
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: out.Name}, sbx); err != nil {
		return nil, out, fmt.Errorf("reading Sandbox %s of the claim: %w", out.Name, err)
	}
	out.Image, out.Phase, out.Runtime = sbx.Spec.Image, string(sbx.Status.Phase), string(sbx.Spec.Runtime)
	return nil, out, nil
}

func (s *Server) checkpoint(ctx context.Context, _ *mcp.CallToolRequest, in checkpointInput) (*mcp.CallToolResult, checkpointOutput, error) {
	sbx, err := s.sandbox(ctx, in.target)
	if err != nil {
		return nil, checkpointOutput{}, err
	}
	ckpt := &dsv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: sbx.Namespace, Name: in.Name},
		Spec:       dsv1alpha1.CheckpointSpec{SandboxName: sbx.Name, Paths: in.Paths},
	}
	if in.Name == "" {
		ckpt.GenerateName = sbx.Name + "-"
	}
	if err := s.opts.Client.Create(ctx, ckpt); err != nil {
		return nil, checkpointOutput{}, fmt.Errorf("creating the Checkpoint of Sandbox %s: %w", sbx.Name, err)
	}
	err = s.poll(ctx, in.TimeoutSeconds, ckpt, func() (bool, error) {
		if ckpt.Status.Phase == dsv1alpha1.CheckpointFailed {
			return false, fmt.Errorf("the Checkpoint %s failed: %s", ckpt.Name, standing(string(ckpt.Status.Phase), ckpt.Status.Conditions))
		}
		return ckpt.Status.Phase == dsv1alpha1.CheckpointReady, nil
	})
	out := checkpointOutput{Name: ckpt.Name, Phase: string(ckpt.Status.Phase), Size: ckpt.Status.Size, SizeBytes: ckpt.Status.SizeBytes, Digest: ckpt.Status.Digest}
	if err != nil {
		return nil, out, timedOut(err, "Checkpoint "+ckpt.Name+" to be Ready", standing(string(ckpt.Status.Phase), ckpt.Status.Conditions))
	}
	return nil, out, nil
}

func (s *Server) deleteSandbox(ctx context.Context, _ *mcp.CallToolRequest, in deleteInput) (*mcp.CallToolResult, deleteOutput, error) {
	sbx, err := s.sandbox(ctx, in.target)
	if err != nil {
		return nil, deleteOutput{}, err
	}
	s.sessions.close(sbx.Namespace, sbx.Name)
	if err := s.delete(ctx, sbx); err != nil {
		return nil, deleteOutput{}, err
	}
	err = s.poll(ctx, in.TimeoutSeconds, sbx, func() (bool, error) { return false, nil })
	if !apierrors.IsNotFound(err) {
		return nil, deleteOutput{}, timedOut(err, "Sandbox "+sbx.Name+" to be gone", standing(string(sbx.Status.Phase), sbx.Status.Conditions))
	}
	return nil, deleteOutput{Deleted: sbx.Name}, nil
}

// delete deletes the Sandbox, or the claim that holds it, which deletes it (a claim whose Sandbox went
// otherwise would say so, Stalled).
func (s *Server) delete(ctx context.Context, sbx *dsv1alpha1.Sandbox) error {
	if claim := sbx.Labels[dsv1alpha1.LabelClaim]; claim != "" {
		err := s.opts.Client.Delete(ctx, &dsv1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: sbx.Namespace, Name: claim}})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting SandboxClaim %s of Sandbox %s: %w", claim, sbx.Name, err)
		}
		return nil
	}
	if err := s.opts.Client.Delete(ctx, sbx, client.Preconditions{UID: &sbx.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Sandbox %s: %w", sbx.Name, err)
	}
	return nil
}

// poll reads obj until done says it has arrived or fails, for at most timeoutSeconds (defaultWait when 0). A
// read that fails ends it with that error (NotFound included: delete_sandbox waits for it).
func (s *Server) poll(ctx context.Context, timeoutSeconds int, obj client.Object, done func() (bool, error)) error {
	timeout := defaultWait
	if timeoutSeconds > 0 {
		timeout = time.Duration(timeoutSeconds) * time.Second
	}
	//nolint:wrapcheck // the error is done's, the read's (wrapped) or the context's, which timedOut classifies
	return wait.PollUntilContextTimeout(ctx, s.opts.PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := s.opts.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, fmt.Errorf("reading %s: %w", client.ObjectKeyFromObject(obj), err)
		}
		return done()
	})
}

// standing says how an object stands for a message: its phase and the reason and message of its Ready
// condition, when an agent has written them.
func standing(phase string, conds []metav1.Condition) string {
	if phase == "" {
		phase = "no phase yet"
	}
	if c := meta.FindStatusCondition(conds, dsv1alpha1.ConditionReady); c != nil && c.Message != "" {
		return fmt.Sprintf("%s; %s: %s", phase, c.Reason, c.Message)
	}
	return phase
}

// timedOut says what was awaited when the wait ran out, and how the object stood.
func timedOut(err error, what, state string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out waiting for %s (%s)", what, state)
	}
	return err
}
