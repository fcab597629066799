package sandbox

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/imagepuller"
	"github.com/dockside-dev/dockside/internal/testutil/recorder"
	"github.com/dockside-dev/dockside/internal/topology"
)

// What the unit tests of the Sandbox reconciler run on: one node, one namespace and locally present images.
const (
	testNode    = "node-a"
	testNS      = "ns"
	testImage   = "dockside.dev/busybox:local"
	holderImage = "dockside.dev/holder:local"
	// testMaxImageBytes is the node's cap on one image (Options.MaxImageBytes).
	testMaxImageBytes = 1 << 30
	specRetry         = 7 * time.Second
	bindRetry         = 5 * time.Second
)

// harness is a Reconciler over fakes: an in-memory Docker daemon (seen through dockerView), an
// in-memory API server and an event recorder, so that one step or one whole pass can be run and its
// effects read back. No case hinges on timing: a deadline is reached by reporting a container as started
// earlier (dockerView.age), never by waiting for it.
type harness struct {
	t      *testing.T
	ctx    context.Context
	r      *Reconciler
	docker *fake.Driver // the daemon itself, for setting up state and reading it back
	view   *dockerView  // the daemon as the reconciler sees it
	client client.Client
	events *events.FakeRecorder

	apiFault func(op string, obj client.Object) error          // an API error to inject, by operation; nil: none
	pulled   chan struct{}                                     // signalled when a pull has ended and its waiters are woken
	poisons  chan types.NamespacedName                         // signalled when a verdict is handed over
	requeues chan event.TypedGenericEvent[*dsv1alpha1.Sandbox] // the passes wakeups asked for
	egress   gateways                                          // where the egress proxy is served
	probeAge atomic.Int64                                      // how far the prober's clock is ahead, in ns (checkAgain)

	writesMu sync.Mutex
	writes   []string // every API write the reconciler made, "<verb> <kind>[/<subresource>]", in order
}

// wrote logs an API write of obj.
func (h *harness) wrote(verb string, obj client.Object, sub string) {
	kind := fmt.Sprintf("%T", obj)[len("*v1alpha1."):]
	if sub != "" {
		kind += "/" + sub
	}
	h.writesMu.Lock()
	defer h.writesMu.Unlock()
	h.writes = append(h.writes, verb+" "+kind)
}

// apiWrites returns the API writes logged so far and forgets them.
func (h *harness) apiWrites() []string {
	h.writesMu.Lock()
	defer h.writesMu.Unlock()
	w := h.writes
	h.writes = nil
	return w
}

// gateways records where the reconciler serves the egress proxy.
type gateways struct {
	mu   sync.Mutex
	open map[netip.Addr]bool
}

func (g *gateways) Open(gw netip.Addr) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = map[netip.Addr]bool{}
	}
	g.open[gw] = true
	return nil
}

func (g *gateways) Keep(gws []netip.Addr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = map[netip.Addr]bool{}
	for _, gw := range gws {
		g.open[gw] = true
	}
}

func (g *gateways) serves(gw string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open[netip.MustParseAddr(gw)]
}

// unboundCache is the fake API server as the reconciler's cache of unbound Sandboxes: a pass only reads it;
// its informers (SetupWithManager's watch) are not there.
type unboundCache struct {
	cache.Cache
	client.Reader
}

func (c unboundCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c unboundCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Reader.List(ctx, list, opts...)
}

// newHarness makes a reconciler of node testNode whose API server holds objs.
func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	h := &harness{
		t: t, ctx: ctrl.LoggerInto(t.Context(), logr.Discard()), docker: fake.New(testNode), events: events.NewFakeRecorder(1000),
		pulled: make(chan struct{}, 1), poisons: make(chan types.NamespacedName, 8),
	}
	h.view = &dockerView{Driver: h.docker, aged: map[string]time.Duration{}}
	h.docker.AddImage(testImage, dd.ImageInfo{})
	h.docker.AddImage(holderImage, dd.ImageInfo{})
	h.client = clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&dsv1alpha1.Sandbox{}, &dsv1alpha1.SandboxService{}, &dsv1alpha1.Checkpoint{}, &dsv1alpha1.Execution{}).
		WithInterceptorFuncs(h.interceptor()).Build()
	h.requeues = make(chan event.TypedGenericEvent[*dsv1alpha1.Sandbox], 100)
	pulls, err := imagepuller.OpenRecords("") // the node's pull records, in memory
	if err != nil {
		t.Fatal(err)
	}
	h.r = &Reconciler{
		Client: h.client, APIReader: h.client, Unbound: unboundCache{Reader: h.client}, Driver: h.view, Recorder: h.events,
		Options: Options{
			Node: testNode, Capacity: 10, Allocatable: Holding{Memory: 64 << 30}, HolderImage: holderImage, BindRetry: bindRetry, SpecRetry: specRetry,
			StopGrace: time.Second, ProbeLimit: 1024, EgressProxyPort: 3128, MaxImageBytes: testMaxImageBytes,
		},
		Egress:   &h.egress,
		Freezes:  &handoff.Freezes{},
		Verdicts: handoff.NewVerdicts(func(key types.NamespacedName) { h.poisons <- key }),
		Images:   imagepuller.New(h.ctx, h.view, pulls, testMaxImageBytes, h.wokenByPull),
		Wake:     handoff.NewWakeups(h.ctx, h.requeues),
	}
	h.r.probes.Clock = func() time.Time { return time.Now().Add(time.Duration(h.probeAge.Load())) }
	return h
}

// interceptor passes every API call to the fake API server unless apiFault injects an error for it.
func (h *harness) interceptor() interceptor.Funcs {
	fault := func(op string, obj client.Object) error {
		if h.apiFault == nil {
			return nil
		}
		return h.apiFault(op, obj)
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := fault("get", obj); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := fault("patch "+sub, obj); err != nil {
				return err
			}
			h.wrote("patch", obj, sub)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			h.wrote("update", obj, sub)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := fault("patch", obj); err != nil {
				return err
			}
			h.wrote("patch", obj, "")
			return c.Patch(ctx, obj, patch, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			h.wrote("update", obj, "")
			return c.Update(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			h.wrote("create", obj, "")
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			h.wrote("delete", obj, "")
			return c.Delete(ctx, obj, opts...)
		},
	}
}

// wokenByPull is the image puller's wake: a wake that comes once the driver's pull has returned is the one
// that follows the pull's end (progress wakes come only while it runs), so the test can go on exactly then.
func (h *harness) wokenByPull(types.NamespacedName) {
	if h.view.pulls.Load() > 0 {
		select {
		case h.pulled <- struct{}{}:
		default:
		}
	}
}

// dockerView is the fake daemon as the reconciler sees it, with two things a test needs: containers can be
// reported as started earlier than they were (the fake starts them at the real now, and deadlines count
// from the start), and the calls that change a container's state are logged in order.
type dockerView struct {
	*fake.Driver
	pulls atomic.Int32 // pulls that have returned

	mu   sync.Mutex
	aged map[string]time.Duration // by container name: how much earlier than real it started
	log  []string                 // "<op> <container>", in call order
}

// age makes the container appear started d earlier than it was.
func (v *dockerView) age(name string, d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.aged[name] = d
}

func (v *dockerView) shift(c dd.ContainerInfo) dd.ContainerInfo {
	v.mu.Lock()
	defer v.mu.Unlock()
	if age, ok := v.aged[c.Name]; ok && !c.StartedAt.IsZero() {
		c.StartedAt = c.StartedAt.Add(-age)
	}
	return c
}

func (v *dockerView) record(op, name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.log = append(v.log, op+" "+name)
}

// clear forgets the calls logged so far.
func (v *dockerView) clear() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.log = nil
}

// calls returns the logged calls so far.
func (v *dockerView) calls() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.log...)
}

func (v *dockerView) ListContainers(ctx context.Context, match map[string]string) ([]dd.ContainerInfo, error) {
	cs, err := v.Driver.ListContainers(ctx, match)
	for i := range cs {
		cs[i] = v.shift(cs[i])
	}
	return cs, err
}

func (v *dockerView) ObserveContainer(ctx context.Context, name string) (dd.ContainerInfo, error) {
	c, err := v.Driver.ObserveContainer(ctx, name)
	return v.shift(c), err
}

func (v *dockerView) StartContainer(ctx context.Context, name string) error {
	v.record("start", name)
	return v.Driver.StartContainer(ctx, name)
}

func (v *dockerView) StopContainer(ctx context.Context, name string, grace time.Duration) error {
	v.record("stop", name)
	return v.Driver.StopContainer(ctx, name, grace)
}

func (v *dockerView) PauseContainer(ctx context.Context, name string) error {
	v.record("pause", name)
	return v.Driver.PauseContainer(ctx, name)
}

func (v *dockerView) UnpauseContainer(ctx context.Context, name string) error {
	v.record("unpause", name)
	return v.Driver.UnpauseContainer(ctx, name)
}

func (v *dockerView) PullImage(ctx context.Context, ref string, auth *dd.RegistryAuth, progress func(dd.PullProgress)) (dd.PullResult, error) {
	res, err := v.Driver.PullImage(ctx, ref, auth, progress)
	v.pulls.Add(1)
	return res, err
}

// Objects the tests start from.

// newSandbox is a session bound to testNode and admitted (it holds the cleanup finalizer), at metadata
// generation 1, before its first topology.
func newSandbox(name string, mutate ...func(*dsv1alpha1.Sandbox)) *dsv1alpha1.Sandbox {
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNS, Name: name, UID: types.UID("uid-" + name), Generation: 1,
			Finalizers: []string{dsv1alpha1.FinalizerCleanup},
		},
		Spec: dsv1alpha1.SandboxSpec{Image: testImage, NodeName: testNode},
	}
	for _, m := range mutate {
		m(sbx)
	}
	return sbx
}

// newService is a SandboxService in testNS, without readiness.
func newService(name string, mutate ...func(*dsv1alpha1.SandboxService)) *dsv1alpha1.SandboxService {
	svc := &dsv1alpha1.SandboxService{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-svc-" + name), Generation: 1},
		Spec:       dsv1alpha1.SandboxServiceSpec{Image: testImage},
	}
	for _, m := range mutate {
		m(svc)
	}
	return svc
}

// atTopology puts the Sandbox at topology generation gen, built from its spec as it is now with services
// (nil for one that does not exist): what a pass that rolled it recorded.
func atTopology(sbx *dsv1alpha1.Sandbox, gen int64, services ...*dsv1alpha1.SandboxService) *dsv1alpha1.Sandbox {
	sbx.Status.TopologyGeneration = gen
	sbx.Status.TopologyHash = topology.Hash(&sbx.Spec, sbx.Spec.Services, services)
	sbx.Status.Phase = dsv1alpha1.SandboxStarting
	for _, name := range sbx.Spec.Services {
		sbx.Status.Services = append(sbx.Status.Services, dsv1alpha1.ServiceInstanceStatus{Name: name, State: dsv1alpha1.ServicePending})
	}
	return sbx
}

// withCondition sets a condition the way an earlier pass would have.
func withCondition(sbx *dsv1alpha1.Sandbox, typ string, on bool, reason, message string) *dsv1alpha1.Sandbox {
	s := metav1.ConditionFalse
	if on {
		s = metav1.ConditionTrue
	}
	sbx.Status.Conditions = append(sbx.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message})
	return sbx
}

// condition is the Sandbox's condition typ; the zero Condition when it has none.
func condition(sbx *dsv1alpha1.Sandbox, typ string) metav1.Condition {
	if c := apimeta.FindStatusCondition(sbx.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// withStarted records that the primary of the current topology started a moment ago.
func withStarted(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	sbx.Status.ContainerID = "recorded"
	sbx.Status.StartTime = &metav1.Time{Time: time.Now()}
	return sbx
}

// finished records a run whose command exited 0 a moment ago.
func finished(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	withStarted(sbx)
	sbx.Status.Result = &dsv1alpha1.RunResult{ExitCode: new(int32), Reason: dsv1alpha1.ReasonCompleted}
	sbx.Status.FinishTime = &metav1.Time{Time: time.Now()}
	return sbx
}

// run makes the Sandbox a run (it has a command).
func run(mutate ...func(*dsv1alpha1.Sandbox)) func(*dsv1alpha1.Sandbox) {
	return func(sbx *dsv1alpha1.Sandbox) {
		sbx.Spec.Command = []string{"sh", "-c", "echo hello"}
		for _, m := range mutate {
			m(sbx)
		}
	}
}

// commandsRunning stands in for the Execution reconciler's runs: the Sandboxes an Execution's command runs in.
type commandsRunning map[types.UID]bool

func (c commandsRunning) Running(uid types.UID) bool { return c[uid] }

// Building the Docker state a case starts from.

// scope is what a pass knows of sbx after its first two steps (observe, resolveSpec).
func (h *harness) scope(sbx *dsv1alpha1.Sandbox) *scope {
	h.t.Helper()
	s := newScope(sbx)
	h.continues(h.r.observe(h.ctx, s))
	h.continues(h.r.resolveSpec(h.ctx, s))
	return s
}

// imagesPass is a pass as far as ensureImages, over the Sandbox as its harness holds it.
func (h *harness) imagesPass(sbx *dsv1alpha1.Sandbox) (*scope, bool, error) {
	s := h.scope(sbx)
	h.continues(h.r.trackStartup(h.ctx, s))
	stop, err := h.r.ensureImages(h.ctx, s)
	return s, stop, err
}

// continues fails the test unless a step went on.
func (h *harness) continues(stop bool, err error) {
	h.t.Helper()
	if stop || err != nil {
		h.t.Fatalf("a step of the setup ended the pass: stop=%v err=%v", stop, err)
	}
}

func (h *harness) noErr(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// makeWorkspace makes the workspace volume and its running holder.
func (h *harness) makeWorkspace(s *scope) {
	h.t.Helper()
	h.makeVolume(s)
	h.start(h.r.holderSpec(s))
}

// makeNetwork makes what the primary joins: the topology's own network when it has services, the node's
// shared one when it may reach out, none otherwise; s.attachment says which.
func (h *harness) makeNetwork(s *scope) {
	h.t.Helper()
	h.continues(h.r.ensureNetwork(h.ctx, s))
}

// primarySpec is the primary container of s, with the network it joins (makeNetwork) and the workspace and
// run volumes it mounts made.
func (h *harness) primarySpec(s *scope) dd.ContainerSpec {
	h.t.Helper()
	h.makeNetwork(s)
	h.makeVolume(s)
	_, err := h.r.ensureRunVolume(h.ctx, s)
	h.noErr(err)
	return h.r.primarySpec(s)
}

// makeVolume makes the workspace volume, without its holder.
func (h *harness) makeVolume(s *scope) {
	h.t.Helper()
	_, err := h.docker.EnsureVolume(h.ctx, dd.VolumeSpec{
		Name: s.volumeName(), Owner: s.names().WorkspaceOwner(), Role: dsv1alpha1.RoleWorkspace, SizeBytes: topology.WorkspaceBytes(s.sbx.Spec.Workspace),
	})
	h.noErr(err)
}

// serviceSpec is s's instance of svc, with the network it joins made.
func (h *harness) serviceSpec(s *scope, svc *dsv1alpha1.SandboxService) dd.ContainerSpec {
	h.t.Helper()
	h.makeNetwork(s)
	return h.r.serviceSpec(s, svc)
}

// runningTopology makes the workspace with its holder, starts the services (in the order given), then the
// primary: a topology as a pass that built it leaves it.
func (h *harness) runningTopology(s *scope, services ...*dsv1alpha1.SandboxService) {
	h.t.Helper()
	h.makeWorkspace(s)
	for _, svc := range services {
		h.start(h.serviceSpec(s, svc))
	}
	h.start(h.primarySpec(s))
}

// create makes a container in state created and returns its name.
func (h *harness) create(spec dd.ContainerSpec) string {
	h.t.Helper()
	c, err := h.docker.EnsureContainer(h.ctx, spec)
	h.noErr(err)
	return c.Name
}

// start makes a container and starts it.
func (h *harness) start(spec dd.ContainerSpec) string {
	h.t.Helper()
	name := h.create(spec)
	h.noErr(h.docker.StartContainer(h.ctx, name))
	return name
}

// exited makes a container that ran and exited with code.
func (h *harness) exited(spec dd.ContainerSpec, code int) string {
	h.t.Helper()
	name := h.start(spec)
	h.noErr(h.docker.Exit(name, code))
	return name
}

// paused makes a container that runs frozen.
func (h *harness) paused(spec dd.ContainerSpec) string {
	h.t.Helper()
	name := h.start(spec)
	h.noErr(h.docker.PauseContainer(h.ctx, name))
	return name
}

// Reading the outcome back.

// container is what Docker holds under name (Exists false when nothing).
func (h *harness) container(name string) dd.ContainerInfo {
	h.t.Helper()
	c, err := h.docker.ObserveContainer(h.ctx, name)
	h.noErr(err)
	return c
}

func (h *harness) network(name string) dd.NetworkInfo {
	h.t.Helper()
	n, err := h.docker.ObserveNetwork(h.ctx, name)
	h.noErr(err)
	return n
}

func (h *harness) volume(name string) dd.VolumeInfo {
	h.t.Helper()
	v, err := h.docker.ObserveVolume(h.ctx, name)
	h.noErr(err)
	return v
}

// owned counts what Docker holds for the Sandbox uid: containers, networks, volumes.
func (h *harness) owned(uid types.UID) (containers, networks, volumes int) {
	h.t.Helper()
	match := map[string]string{dsv1alpha1.LabelUID: string(uid)}
	cs, err := h.docker.ListContainers(h.ctx, match)
	h.noErr(err)
	ns, err := h.docker.ListNetworks(h.ctx, match)
	h.noErr(err)
	vs, err := h.docker.ListVolumes(h.ctx, match)
	h.noErr(err)
	return len(cs), len(ns), len(vs)
}

// get reads the Sandbox back from the API server; nil when it is gone.
func (h *harness) get(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	h.t.Helper()
	out := &dsv1alpha1.Sandbox{}
	err := h.client.Get(h.ctx, client.ObjectKeyFromObject(sbx), out)
	if client.IgnoreNotFound(err) != nil {
		h.t.Fatal(err)
	}
	if err != nil {
		return nil
	}
	return out
}

// Running steps.

// stepFn is one step of reconcileNormal, as a method expression: (*Reconciler).ensurePrimary.
type stepFn func(*Reconciler, context.Context, *scope) (bool, error)

// stepCase is one case of a step: the Sandbox, the API objects and the Docker state it starts from, and
// what the step must leave. A zero want is the outcome a pass starts with (building the topology): the
// step left it alone. events lists the Events the step must record, and no others.
type stepCase struct {
	name    string
	sbx     *dsv1alpha1.Sandbox
	objects []client.Object            // besides the Sandbox: SandboxServices, Secrets, Checkpoints
	docker  func(h *harness, s *scope) // Docker state (and reconciler settings) before the pass observes it
	faults  func(h *harness)           // faults injected right before the step under test
	stop    bool
	err     bool
	want    outcome
	message string // a part of the outcome's message, when it matters
	events  []string
	check   func(g Gomega, h *harness, s *scope)
	// checked runs the step a first time and lets the readiness checks or the restore it started complete:
	// the pass under test is the one their wake brings. Events and calls cover both runs.
	checked bool
}

// outcome is how a pass's finding shows in the status: the phase and summary derivePhase makes of it.
type outcome struct {
	phase   dsv1alpha1.SandboxPhase
	ready   bool
	stalled bool
	reason  string
	message string
}

func outcomeOf(s *scope) outcome {
	phase, sum := s.phase()
	return outcome{phase: phase, ready: sum.Ready, stalled: sum.Stalled, reason: sum.Reason, message: sum.Message}
}

// building is the outcome a pass starts with.
var building = outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonCreating}

// runStepCases runs each case: its Docker state is built, a pass's scope observes it, the prior steps run
// (each must go on), then the step under test, whose Events and logged Docker calls alone are checked.
func runStepCases(t *testing.T, under stepFn, cases []stepCase, prior ...stepFn) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			objs := append([]client.Object{tc.sbx.DeepCopy()}, tc.objects...)
			h := newHarness(t, objs...)
			if tc.docker != nil {
				tc.docker(h, h.scope(tc.sbx.DeepCopy()))
			}
			s := h.scope(tc.sbx)
			for _, step := range prior {
				h.continues(step(h.r, h.ctx, s))
			}
			if tc.faults != nil {
				tc.faults(h)
			}
			recorder.Drain(h.events)
			h.view.clear()
			stop, err := under(h.r, h.ctx, s)
			if tc.checked {
				h.checksDone()
				s = h.scope(s.sbx)
				for _, step := range prior {
					h.continues(step(h.r, h.ctx, s))
				}
				stop, err = under(h.r, h.ctx, s)
			}
			g.Expect(stop).To(Equal(tc.stop), "stop")
			if tc.err {
				g.Expect(err).To(HaveOccurred())
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			want := tc.want
			if want == (outcome{}) {
				want = building
			}
			got := outcomeOf(s)
			g.Expect(got.message).To(ContainSubstring(tc.message), "outcome message")
			got.message, want.message = "", ""
			g.Expect(got).To(Equal(want), "outcome")
			g.Expect(recorder.Drain(h.events)).To(Equal(tc.events), "events")
			if tc.check != nil {
				tc.check(g, h, s)
			}
		})
	}
}
