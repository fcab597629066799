//go:build integration

// Package controllers_test runs the node agent (internal/agent, the Sandbox reconciler and its helpers)
// against a real kube-apiserver (envtest) and the fake Docker driver with fault injection. Each spec starts
// its own agents under node names of its own, in a namespace of its own, so that specs never see each
// other's objects. Run with KUBEBUILDER_ASSETS=$(bash hack/build-controlplane.sh).
package controllers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
	"github.com/dockside-dev/dockside/internal/localcluster"
	"github.com/dockside-dev/dockside/test/internal/envtestenv"
	"github.com/dockside-dev/dockside/test/internal/namespaces"
)

const (
	busybox = "dockside.dev/busybox:local"
	holder  = agent.DefaultHolderImage
	// A wait ends as soon as its condition holds: the bound only matters when a spec fails, so it is wide
	// enough for a loaded 2-core CI machine (10 s was missed at load 17 by a spec waiting on an Event).
	timeout = 30 * time.Second
	tick    = 20 * time.Millisecond
)

var (
	env     *envtestenv.Env
	cfg     *rest.Config
	k8s     client.Client
	scheme  *runtime.Scheme
	nodeSeq atomic.Int64
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(timeout)
	SetDefaultEventuallyPollingInterval(tick)
	SetDefaultConsistentlyDuration(500 * time.Millisecond)
	SetDefaultConsistentlyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Controllers (agent against a real API server and the fake driver)")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = envtestenv.Start(localcluster.Options{})
	Expect(err).NotTo(HaveOccurred())
	cfg, k8s, scheme = env.Config, env.Client, env.Scheme
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// testAgent is one running agent and its fake Docker daemon.
type testAgent struct {
	node   string
	docker *fake.Driver
	stop   func()
}

// newNode returns a node name no other spec uses.
func newNode() string { return fmt.Sprintf("node-%d", nodeSeq.Add(1)) }

// newDocker returns a fake daemon for node with the holder and busybox images present.
func newDocker(node string) *fake.Driver {
	d := fake.New(node)
	d.AddImage(holder, dd.ImageInfo{})
	d.AddImage(busybox, dd.ImageInfo{})
	return d
}

// startAgent runs an agent for node on docker with short test timings (tweak adjusts them) until the spec
// ends. The driver given to the agent is docker unless wrap replaces it.
func startAgent(node string, docker *fake.Driver, tweak ...func(*agent.Options)) *testAgent {
	return startAgentOn(cfg, node, docker, tweak...)
}

// startAgentOn is startAgent with the agent talking to the API server through conf (one whose transport
// injects faults).
func startAgentOn(conf *rest.Config, node string, docker *fake.Driver, tweak ...func(*agent.Options)) *testAgent {
	opts := agent.Options{
		Node: node, Driver: docker, Capacity: 8,
		SweepPeriod: time.Hour, BindRetry: 200 * time.Millisecond, SpecRetry: 300 * time.Millisecond,
		StopGrace: 0, DockerTimeout: 5 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, Workers: 2,
	}
	for _, t := range tweak {
		t(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := agent.New(ctx, conf, opts)
	Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	a := &testAgent{node: node, docker: docker}
	a.stop = func() {
		cancel()
		Eventually(done).Should(BeClosed())
	}
	DeferCleanup(a.stop)
	return a
}

// newAgent starts an agent on a fresh node with a fresh fake daemon.
func newAgent(tweak ...func(*agent.Options)) *testAgent {
	node := newNode()
	return startAgent(node, newDocker(node), tweak...)
}

// newNamespace creates a namespace for one spec. Its cleanup runs after the spec's agents stopped (it is
// registered first), which is why it takes finalizers off what it deletes.
func newNamespace() string {
	GinkgoHelper()
	ns, err := namespaces.Create(ctx(), k8s, "ctl")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(namespaces.Delete, k8s, ns)
	return ns
}

// sandbox is a session on busybox in ns, bound to node (unbound when node is empty).
func sandbox(ns, name, node string) *dsv1alpha1.Sandbox {
	return &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.SandboxSpec{Image: busybox, NodeName: node},
	}
}

// service is a SandboxService on busybox in ns.
func service(ns, name string) *dsv1alpha1.SandboxService {
	return &dsv1alpha1.SandboxService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.SandboxServiceSpec{Image: busybox, Command: []string{"sleep", "3600"}},
	}
}

func create(obj client.Object) {
	GinkgoHelper()
	Expect(k8s.Create(context.Background(), obj)).To(Succeed())
}

// get reads the current version of sbx.
func get(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	GinkgoHelper()
	out := &dsv1alpha1.Sandbox{}
	Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(sbx), out)).To(Succeed())
	return out
}

// update applies change to the current version of sbx, retrying on conflicts with the agent.
func update(sbx *dsv1alpha1.Sandbox, change func(*dsv1alpha1.Sandbox)) {
	GinkgoHelper()
	Eventually(func() error {
		cur := &dsv1alpha1.Sandbox{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(sbx), cur); err != nil {
			return err
		}
		change(cur)
		return k8s.Update(context.Background(), cur)
	}).Should(Succeed())
}

// phase polls the Sandbox's phase.
func phase(sbx *dsv1alpha1.Sandbox) func() dsv1alpha1.SandboxPhase {
	return func() dsv1alpha1.SandboxPhase {
		cur := &dsv1alpha1.Sandbox{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(sbx), cur); err != nil {
			return "<" + dsv1alpha1.SandboxPhase(err.Error()) + ">"
		}
		return cur.Status.Phase
	}
}

// condition polls one condition of the Sandbox, as "Status/Reason".
func condition(sbx *dsv1alpha1.Sandbox, typ string) func() string {
	return func() string {
		cur := &dsv1alpha1.Sandbox{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(sbx), cur); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, typ)
		if c == nil {
			return "absent"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// message is the message of one condition of the Sandbox now.
func message(sbx *dsv1alpha1.Sandbox, typ string) string {
	GinkgoHelper()
	c := meta.FindStatusCondition(get(sbx).Status.Conditions, typ)
	Expect(c).NotTo(BeNil())
	return c.Message
}

// gone polls whether the Sandbox has been deleted for good.
func gone(sbx *dsv1alpha1.Sandbox) func() bool {
	return func() bool {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(sbx), &dsv1alpha1.Sandbox{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}
}

// containers lists what the fake daemon holds for the Sandbox (by UID), of one role ("" for any).
func containers(d *fake.Driver, sbx *dsv1alpha1.Sandbox, role string) []dd.ContainerInfo {
	GinkgoHelper()
	match := map[string]string{dsv1alpha1.LabelUID: string(get(sbx).UID)}
	if role != "" {
		match[dsv1alpha1.LabelRole] = role
	}
	list, err := d.ListContainers(context.Background(), match)
	Expect(err).NotTo(HaveOccurred())
	return list
}

// container is the one container of a role (and service) the Sandbox's current topology has.
func container(d *fake.Driver, sbx *dsv1alpha1.Sandbox, role, svc string) dd.ContainerInfo {
	GinkgoHelper()
	cur := get(sbx)
	gen := cur.Status.TopologyGeneration
	if role == dsv1alpha1.RoleHolder {
		gen = 0
	}
	name := dd.Name(dd.Owner{Namespace: cur.Namespace, Name: cur.Name, UID: string(cur.UID), Generation: gen}, role, svc)
	info, err := d.ObserveContainer(context.Background(), name)
	Expect(err).NotTo(HaveOccurred())
	return info
}

// state polls the state of the container of a role (and service) of the Sandbox's current topology.
func state(d *fake.Driver, sbx *dsv1alpha1.Sandbox, role, svc string) func() dd.ContainerState {
	return func() dd.ContainerState { return container(d, sbx, role, svc).State }
}

// holdings counts everything the fake daemon holds for the Sandbox UID: containers, networks, volumes.
func holdings(d *fake.Driver, uid string) int {
	GinkgoHelper()
	match := map[string]string{dsv1alpha1.LabelUID: uid}
	cs, err := d.ListContainers(context.Background(), match)
	Expect(err).NotTo(HaveOccurred())
	ns, err := d.ListNetworks(context.Background(), match)
	Expect(err).NotTo(HaveOccurred())
	vs, err := d.ListVolumes(context.Background(), match)
	Expect(err).NotTo(HaveOccurred())
	return len(cs) + len(ns) + len(vs)
}

// ctx is the context of calls the specs make themselves.
func ctx() context.Context { return context.Background() }

func objectKey(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}
