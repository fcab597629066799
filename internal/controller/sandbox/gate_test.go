package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func withAliases(aliases ...string) func(*dsv1alpha1.SandboxService) {
	return func(svc *dsv1alpha1.SandboxService) { svc.Spec.Aliases = aliases }
}

func TestTopologyNameCollision(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sandbox  string
		services []*dsv1alpha1.SandboxService
		want     string // "" for no collision
	}{
		{name: "no services", sandbox: "shell"},
		{
			name: "distinct names and aliases", sandbox: "shell",
			services: []*dsv1alpha1.SandboxService{newService("api", withAliases("backend")), newService("db", withAliases("postgres", "pg"))},
		},
		{
			name: "an alias repeating its own service's name resolves to one container", sandbox: "shell",
			services: []*dsv1alpha1.SandboxService{newService("api", withAliases("api"))},
		},
		{
			name: "a missing SandboxService claims nothing", sandbox: "shell",
			services: []*dsv1alpha1.SandboxService{nil, newService("api")},
		},
		{
			name: "a service's name and another's alias", sandbox: "shell",
			services: []*dsv1alpha1.SandboxService{newService("api"), newService("gateway", withAliases("edge", "api"))},
			want:     `the name "api" is claimed by service "api" and by an alias of service "gateway"`,
		},
		{
			name: "an alias and a later service's name", sandbox: "shell",
			services: []*dsv1alpha1.SandboxService{newService("gateway", withAliases("api")), newService("api")},
			want:     `the name "api" is claimed by an alias of service "gateway" and by service "api"`,
		},
		{
			name: "two services' aliases", sandbox: "shell",
			services: []*dsv1alpha1.SandboxService{newService("pg", withAliases("db")), newService("mysql", withAliases("db"))},
			want:     `the name "db" is claimed by an alias of service "pg" and by an alias of service "mysql"`,
		},
		{
			name: "a service named like the Sandbox", sandbox: "api",
			services: []*dsv1alpha1.SandboxService{newService("api")},
			want:     `the name "api" is claimed by the primary (the Sandbox's own name) and by service "api"`,
		},
		{
			name: "an alias equal to the Sandbox's name", sandbox: "shell",
			services: []*dsv1alpha1.SandboxService{newService("db", withAliases("shell"))},
			want:     `the name "shell" is claimed by the primary (the Sandbox's own name) and by an alias of service "db"`,
		},
		{
			name: "names differing only in case are one DNS name", sandbox: "shell",
			services: []*dsv1alpha1.SandboxService{newService("api"), newService("gateway", withAliases("API"))},
			want:     `the name "API" is claimed by service "api" and by an alias of service "gateway"`,
		},
		{
			name: "the first collision in start order is the one named", sandbox: "shell",
			services: []*dsv1alpha1.SandboxService{newService("a", withAliases("x")), newService("b", withAliases("x", "a"))},
			want:     `the name "x" is claimed by an alias of service "a" and by an alias of service "b"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			msg, ok := topologyNameCollision(newSandbox(tc.sandbox), tc.services)
			g.Expect(ok).To(Equal(tc.want != ""))
			g.Expect(msg).To(Equal(tc.want))
		})
	}
}

func TestCheckNames(t *testing.T) {
	api, gateway := newService("api"), newService("gateway", withAliases("api"))
	colliding := func() *dsv1alpha1.Sandbox {
		return atTopology(newSandbox("s", withServices("api", "gateway")), 1, api, gateway)
	}
	runStepCases(t, (*Reconciler).checkNames, []stepCase{
		{
			name:    "unique names: the start goes on",
			sbx:     atTopology(newSandbox("s", withServices("api")), 1, api),
			objects: []client.Object{api},
		},
		{
			name:    "a collision fails the start before anything is built",
			sbx:     colliding(),
			objects: []client.Object{api, gateway},
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonNameCollision},
			message: `the name "api" is claimed by service "api" and by an alias of service "gateway"`,
		},
		{
			name:    "a topology that runs is left alone",
			sbx:     withStarted(colliding()),
			objects: []client.Object{api, gateway},
		},
	})
}

// A Sandbox whose services collide fails on its first start, and Docker holds nothing for it: not even the
// workspace, which is made after the check.
func TestReconcileRefusesNameCollision(t *testing.T) {
	g := NewWithT(t)
	api, gateway := newService("api"), newService("gateway", withAliases("api"))
	sbx := bound(newSandbox("s", withServices("api", "gateway")))
	h := newHarness(t, api, gateway, sbx)

	got := h.passUntil(g, sbx, 3, func(s *dsv1alpha1.Sandbox) bool { return s.Status.Phase == dsv1alpha1.SandboxFailed })
	ready := condition(got, dsv1alpha1.ConditionReady)
	g.Expect(ready.Status).To(BeEquivalentTo("False"))
	g.Expect(ready.Reason).To(Equal(dsv1alpha1.ReasonNameCollision))
	g.Expect(ready.Message).To(ContainSubstring(`the name "api" is claimed by service "api" and by an alias of service "gateway"`))
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, dsv1alpha1.ConditionStalled)).To(BeTrue(), "Stalled")
	g.Expect(condition(got, dsv1alpha1.ConditionServicesUpToDate).Reason).To(Equal(dsv1alpha1.ReasonNameCollision))
	containers, networks, volumes := h.owned(sbx.UID)
	g.Expect([]int{containers, networks, volumes}).To(Equal([]int{0, 0, 0}), "Docker holds nothing for it")
}

// A SandboxService edited to collide with a topology that runs does not disrupt it: Ready stays True, and
// ServicesUpToDate says NameCollision until the names are unique again.
func TestReconcileKeepsRunningTopologyOnLaterCollision(t *testing.T) {
	g := NewWithT(t)
	api, gateway := newService("api"), newService("gateway")
	sbx := bound(newSandbox("s", withServices("api", "gateway")))
	h := newHarness(t, api, gateway, sbx)
	h.passUntil(g, sbx, 6, isReady)

	edited := &dsv1alpha1.SandboxService{}
	h.noErr(h.client.Get(h.ctx, client.ObjectKeyFromObject(gateway), edited))
	edited.Spec.Aliases = []string{"api"}
	edited.Generation++
	h.noErr(h.client.Update(h.ctx, edited))
	_, err := h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())

	got := h.get(sbx)
	g.Expect(isReady(got)).To(BeTrue(), "the running topology is left as it is")
	upToDate := condition(got, dsv1alpha1.ConditionServicesUpToDate)
	g.Expect(upToDate.Status).To(BeEquivalentTo("False"))
	g.Expect(upToDate.Reason).To(Equal(dsv1alpha1.ReasonNameCollision))
	g.Expect(upToDate.Message).To(ContainSubstring(`the name "api" is claimed by service "api" and by an alias of service "gateway"`))
}
