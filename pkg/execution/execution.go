// Package execution runs commands in Dockside session Sandboxes through the Kubernetes API server: it creates
// an Execution, waits for the node's agent to run it, and returns its exit code and output. Every run is
// subject to RBAC and the audit log, and needs no network path to the agent. Agent frameworks use it like
// this:
//
//	c, err := execution.New(ctrl.GetConfigOrDie())
//	res, err := c.Run(ctx, execution.Request{
//		Namespace: "default", Sandbox: "shell",
//		Command: []string{"python3", "-"}, Stdin: "print(6 * 7)\n",
//	})
//	fmt.Print(res.Stdout) // 42
//
// Nothing is ever retried: a command that may have run has run. Cancelling ctx while the command runs
// deletes its Execution, which kills the Sandbox's container (and marks the Sandbox TopologyPoisoned).
package execution

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/objectwait"
)

// cleanupTimeout bounds deleting an Execution after its caller gave up on it.
const cleanupTimeout = 10 * time.Second

// Client runs Executions.
type Client struct {
	kube client.WithWatch
}

// New returns a Client for the API server of cfg.
func New(cfg *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering Dockside's kinds: %w", err)
	}
	kube, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("making the API client: %w", err)
	}
	return &Client{kube: kube}, nil
}

// Request is one command to run. Zero values take the Execution's defaults.
type Request struct {
	Namespace  string
	Sandbox    string   // a session Sandbox (one without a command) in Namespace
	Command    []string // argv, run without a shell
	Stdin      string   // written to the command's standard input, at most 64 KiB
	Env        map[string]string
	WorkingDir string
	// Timeout is the host-enforced deadline, in whole seconds (default 60s). When it passes, the agent kills
	// the Sandbox's container and the Sandbox is marked TopologyPoisoned.
	Timeout time.Duration
	// MaxOutputBytes caps the bytes kept of each of stdout and stderr (default 64 KiB; the node may lower it).
	MaxOutputBytes int32
	// Keep leaves the Execution in the API (until its ttlSecondsAfterFinished) instead of deleting it once
	// its result is read.
	Keep bool
}

// Result is how an Execution ended.
type Result struct {
	Name     string // of the Execution
	Phase    dsv1alpha1.ExecutionPhase
	Reason   string // Completed, Error, DeadlineExceeded, OutputLimitExceeded, Canceled, SandboxNotReady, SandboxNotFound, Lost
	Message  string
	ExitCode *int32 // set when the command exited on its own
	Stdout   string
	Stderr   string
	// StdoutTruncatedBytes and StderrTruncatedBytes count the bytes cut past MaxOutputBytes.
	StdoutTruncatedBytes int64
	StderrTruncatedBytes int64
	// SandboxKilled: the agent killed the Sandbox's container for this command (deadline, cancel, processes
	// left running, lost outcome); the Sandbox is TopologyPoisoned and runs nothing more.
	SandboxKilled bool
	Duration      time.Duration // from the command's start to the Execution's end
}

// Run creates an Execution for req, waits until it ends, deletes it (unless req.Keep) and returns its result.
// A command that exits non-zero is a Result, not an error; errors are for the API (the Sandbox does not
// exist, the Execution is refused or could not be read) and for ctx ending, which cancels the command.
func (c *Client) Run(ctx context.Context, req Request) (*Result, error) {
	ex, err := c.create(ctx, req)
	if err != nil {
		return nil, err
	}
	done, err := c.wait(ctx, ex)
	if err != nil {
		if ctx.Err() != nil {
			c.delete(ex) // cancels the command if it runs, or keeps it from running
		}
		return nil, err
	}
	if !req.Keep {
		c.delete(done)
	}
	return result(done), nil
}

// create makes the Execution, owned by its Sandbox so that a cluster's garbage collector takes it along.
func (c *Client) create(ctx context.Context, req Request) (*dsv1alpha1.Execution, error) {
	sbx := &dsv1alpha1.Sandbox{}
	if err := c.kube.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Sandbox}, sbx); err != nil {
		return nil, fmt.Errorf("reading Sandbox %s/%s: %w", req.Namespace, req.Sandbox, err)
	}
	ex := &dsv1alpha1.Execution{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: req.Namespace, GenerateName: req.Sandbox + "-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: dsv1alpha1.GroupVersion.String(), Kind: "Sandbox", Name: sbx.Name, UID: sbx.UID, Controller: ptr.To(true),
			}},
		},
		Spec: dsv1alpha1.ExecutionSpec{
			SandboxName: req.Sandbox, Command: req.Command, Stdin: req.Stdin, WorkingDir: req.WorkingDir,
			TimeoutSeconds: int32((req.Timeout + time.Second - 1) / time.Second), MaxOutputBytes: req.MaxOutputBytes,
		},
	}
	for _, name := range slices.Sorted(maps.Keys(req.Env)) {
		ex.Spec.Env = append(ex.Spec.Env, dsv1alpha1.ExecutionEnvVar{Name: name, Value: req.Env[name]})
	}
	if err := c.kube.Create(ctx, ex); err != nil {
		return nil, fmt.Errorf("creating an Execution in Sandbox %s/%s: %w", req.Namespace, req.Sandbox, err)
	}
	return ex, nil
}

// wait watches the Execution until it has ended, and returns it as it ended.
func (c *Client) wait(ctx context.Context, ex *dsv1alpha1.Execution) (*dsv1alpha1.Execution, error) {
	cur, err := objectwait.Until(ctx, c.kube, ex, &dsv1alpha1.ExecutionList{}, "Execution",
		func(cur *dsv1alpha1.Execution) (bool, error) { return finished(cur), nil })
	if err != nil {
		return nil, err //nolint:wrapcheck // it names the Execution already
	}
	return cur, nil
}

// delete removes the Execution, whatever ctx the caller had left.
func (c *Client) delete(ex *dsv1alpha1.Execution) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	uid := ex.UID
	_ = client.IgnoreNotFound(c.kube.Delete(ctx, ex, client.Preconditions{UID: &uid}))
}

func finished(ex *dsv1alpha1.Execution) bool {
	return ex.Status.Phase == dsv1alpha1.ExecutionSucceeded || ex.Status.Phase == dsv1alpha1.ExecutionFailed
}

func result(ex *dsv1alpha1.Execution) *Result {
	st := ex.Status
	res := &Result{
		Name: ex.Name, Phase: st.Phase, Reason: st.Reason, Message: st.Message, ExitCode: st.ExitCode,
		Stdout: st.Stdout, Stderr: st.Stderr,
		StdoutTruncatedBytes: st.StdoutTruncatedBytes, StderrTruncatedBytes: st.StderrTruncatedBytes,
		SandboxKilled: st.SandboxKilled,
	}
	if st.StartTime != nil && st.FinishTime != nil {
		res.Duration = st.FinishTime.Sub(st.StartTime.Time)
	}
	return res
}
