package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/localcluster"
	"github.com/dockside-dev/dockside/test/internal/controlprocs"
	"github.com/dockside-dev/dockside/test/internal/loopback"
	"github.com/dockside-dev/dockside/test/internal/namespaces"
)

// env is a control plane of its own with one agent (a child process) and a client that times Sandboxes.
type env struct {
	node  string
	cfg   *rest.Config
	k8s   client.Client
	cp    *localcluster.ControlPlane
	agent *agentProcess
	// apiServer is kube-apiserver as a fault last started it again (faults_test.go), which the control plane
	// does not know of: stop ends it before the control plane's own stop.
	apiServer *controlprocs.Process
	sandboxes *tracker
	claims    *tracker
	stopWatch context.CancelFunc
	// namespaces the benchmarks made, so that what a failed one left is deleted at the end.
	namespaces []string
}

var scheme = runtime.NewScheme()

func init() {
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
}

// agentCommand builds the command line of an agent for node (see realAgent and fakeAgent).
type agentCommand func(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd

// startEnv starts a control plane keeping its state in dir and an agent for node with room for capacity.
func startEnv(ctx context.Context, dir, node string, capacity int, agentCmd agentCommand) (*env, error) {
	e, err := startControlPlane(dir, node, nil)
	if err != nil {
		return nil, err
	}
	if e.agent, err = e.startAgent(ctx, dir, node, capacity, agentCmd); err != nil {
		return nil, errors.Join(err, e.stop())
	}
	return e, nil
}

// startServingEnv is startEnv with the real agent, which also serves the data plane (exec and files through
// the API server's aggregated group), set up as make run sets it up.
func startServingEnv(ctx context.Context, dir, node string, capacity int) (*env, error) {
	ports, err := loopback.FreePorts(1)
	if err != nil {
		return nil, err
	}
	dp := &localcluster.Dataplane{Port: int32(ports[0]), CertDir: filepath.Join(dir, "pki")}
	e, err := startControlPlane(dir, node, dp)
	if err != nil {
		return nil, err
	}
	serving := func(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd {
		cmd := realAgent(node, kubeconfig, metricsAddr, capacity)
		cmd.Args = append(cmd.Args, fmt.Sprintf("--dataplane-bind-address=127.0.0.1:%d", dp.Port), "--dataplane-cert-dir="+dp.AgentCertDir())
		if peerDir, err := dp.PeerCertDir(node); err == nil { // without one the agent serves its own node's Sandboxes, all a bench has
			cmd.Args = append(cmd.Args, "--dataplane-peer-cert-dir="+peerDir)
		}
		return cmd
	}
	if e.agent, err = e.startAgent(ctx, dir, node, capacity, serving); err != nil {
		return nil, errors.Join(err, e.stop())
	}
	return e, nil
}

// startAgent starts an agent for node on the env's control plane, logging to dir/agent-<node>.log (dir/agent.log
// for the env's own node).
func (e *env) startAgent(ctx context.Context, dir, node string, capacity int, agentCmd agentCommand) (*agentProcess, error) {
	addr, err := loopback.FreeAddr()
	if err != nil {
		return nil, err
	}
	log := filepath.Join(dir, "agent-"+node+".log")
	if node == e.node {
		log = filepath.Join(dir, "agent.log")
	}
	return startAgent(ctx, agentCmd(node, e.cp.Kubeconfig, addr, capacity), addr, log)
}

// startControlPlane starts a control plane keeping its state in dir, a client and the Sandbox watch, without an
// agent; node names the env (the baselines' label derives from it). With dataplane, kube-apiserver is also the
// front proxy of the agents' aggregated API (internal/localcluster).
func startControlPlane(dir, node string, dataplane *localcluster.Dataplane) (_ *env, err error) {
	cp, err := localcluster.Start(localcluster.Options{
		CRDDir:         filepath.Join("..", "..", "config", "crd", "bases"),
		DataDir:        filepath.Join(dir, "etcd"),
		KubeconfigPath: filepath.Join(dir, "kubeconfig"),
		Dataplane:      dataplane,
	})
	if err != nil {
		return nil, err
	}
	e := &env{node: node, cp: cp, cfg: rest.CopyConfig(cp.Config)}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.stop())
		}
	}()
	// The benchmark creates hundreds of objects at once: client-side throttling would time the client.
	e.cfg.QPS, e.cfg.Burst = -1, -1
	if e.k8s, err = client.New(e.cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	watchCtx, cancel := context.WithCancel(context.Background())
	e.stopWatch = cancel
	if e.sandboxes, err = newTracker(watchCtx, e.cfg, "Sandbox", &dsv1alpha1.Sandbox{}); err != nil {
		return nil, err
	}
	if e.claims, err = newTracker(watchCtx, e.cfg, "SandboxClaim", &dsv1alpha1.SandboxClaim{}); err != nil {
		return nil, err
	}
	return e, nil
}

// stop stops the agent and the control plane; objects left in the API server go with it.
func (e *env) stop() error {
	var errs []error
	if e.agent != nil {
		errs = append(errs, e.agent.Stop())
	}
	if e.stopWatch != nil {
		e.stopWatch()
	}
	if e.apiServer != nil {
		errs = append(errs, e.apiServer.Stop())
	}
	return errors.Join(append(errs, e.cp.Stop())...)
}

// namespace creates a namespace of its own for one benchmark.
func (e *env) namespace(ctx context.Context, prefix string) (string, error) {
	ns, err := namespaces.Create(ctx, e.k8s, prefix)
	if err != nil {
		return "", err
	}
	e.namespaces = append(e.namespaces, ns)
	return ns, nil
}

// session is a session Sandbox (no command: it stays up until deleted) of the busybox image, with the
// defaults of every other field: cpu 1, memory 512Mi, 256 pids, a 512Mi workspace, network None.
func session(ns, name string) *dsv1alpha1.Sandbox {
	return &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.SandboxSpec{Image: busybox},
	}
}

// applyAndWait creates sbx and waits for it to be Ready; it returns how long that took.
func (e *env) applyAndWait(ctx context.Context, sbx *dsv1alpha1.Sandbox) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	if err := e.k8s.Create(ctx, sbx); err != nil {
		return 0, err
	}
	at, err := e.sandboxes.waitReady(ctx, client.ObjectKeyFromObject(sbx))
	if err != nil {
		return 0, fmt.Errorf("%w\n%s", err, e.agent.LogTail())
	}
	return at.Sub(start), nil
}

// applyAndRead is applyAndWait, then sbx read back: its status names the primary's container.
func (e *env) applyAndRead(ctx context.Context, sbx *dsv1alpha1.Sandbox) error {
	if _, err := e.applyAndWait(ctx, sbx); err != nil {
		return err
	}
	return e.k8s.Get(ctx, client.ObjectKeyFromObject(sbx), sbx)
}

// deleteAll deletes every pool, claim, template, Sandbox, Checkpoint and SandboxService of ns (pools first,
// so that none refills) and waits until the agent has let them go, which it does only once Docker confirmed
// their removal.
func (e *env) deleteAll(ctx context.Context, ns string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	kinds := []struct {
		obj  client.Object
		list client.ObjectList
	}{
		{&dsv1alpha1.SandboxWarmPool{}, &dsv1alpha1.SandboxWarmPoolList{}}, {&dsv1alpha1.SandboxClaim{}, &dsv1alpha1.SandboxClaimList{}},
		{&dsv1alpha1.SandboxTemplate{}, &dsv1alpha1.SandboxTemplateList{}},
		{&dsv1alpha1.Sandbox{}, &dsv1alpha1.SandboxList{}}, {&dsv1alpha1.Checkpoint{}, &dsv1alpha1.CheckpointList{}}, {&dsv1alpha1.SandboxService{}, &dsv1alpha1.SandboxServiceList{}},
	}
	for _, k := range kinds {
		if err := e.k8s.DeleteAllOf(ctx, k.obj, client.InNamespace(ns)); err != nil {
			return err
		}
	}
	for _, k := range kinds {
		if err := e.waitEmpty(ctx, ns, k.list); err != nil {
			return err
		}
	}
	return nil
}

// waitSandboxesGone waits until the agent has let every Sandbox of ns go.
func (e *env) waitSandboxesGone(ctx context.Context, ns string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return e.waitEmpty(ctx, ns, &dsv1alpha1.SandboxList{})
}

// waitEmpty waits until list, listed in ns, is empty or ctx ends.
func (e *env) waitEmpty(ctx context.Context, ns string, list client.ObjectList) error {
	for {
		if err := e.k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("waiting for the deletion of every %T in %s: %w\n%s", list, ns, err, e.agent.LogTail())
		}
		if meta.LenList(list) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %T left in %s: %w\n%s", meta.LenList(list), list, ns, ctx.Err(), e.agent.LogTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
