package topology

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestHash(t *testing.T) {
	g := NewWithT(t)
	base := dsv1alpha1.SandboxSpec{Image: "img:1", Services: []string{"db"}, Resources: dsv1alpha1.Resources{CPU: resource.MustParse("1")}}
	db := &dsv1alpha1.SandboxService{ObjectMeta: metav1.ObjectMeta{Name: "db", UID: "u1", Generation: 1}}
	hash := func(spec dsv1alpha1.SandboxSpec, svc *dsv1alpha1.SandboxService) string {
		return Hash(&spec, spec.Services, []*dsv1alpha1.SandboxService{svc})
	}
	h := hash(base, db)

	for name, tc := range map[string]struct {
		change  func(*dsv1alpha1.SandboxSpec)
		same    bool // the whole hash is unchanged
		sameOwn bool // the Sandbox's own half is unchanged
		svcGen  int64
	}{
		"nothing":                   {change: func(*dsv1alpha1.SandboxSpec) {}, same: true, sameOwn: true},
		"the same cpu, written so":  {change: func(s *dsv1alpha1.SandboxSpec) { s.Resources.CPU = resource.MustParse("1000m") }, same: true, sameOwn: true},
		"lifecycle":                 {change: func(s *dsv1alpha1.SandboxSpec) { s.Lifecycle = dsv1alpha1.LifecyclePaused }, same: true, sameOwn: true},
		"deadline":                  {change: func(s *dsv1alpha1.SandboxSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](5) }, same: true, sameOwn: true},
		"image":                     {change: func(s *dsv1alpha1.SandboxSpec) { s.Image = "img:2" }},
		"command":                   {change: func(s *dsv1alpha1.SandboxSpec) { s.Command = []string{"true"} }},
		"env":                       {change: func(s *dsv1alpha1.SandboxSpec) { s.Env = []dsv1alpha1.EnvVar{{Name: "A", Value: "1"}} }},
		"network":                   {change: func(s *dsv1alpha1.SandboxSpec) { s.Network.Mode = dsv1alpha1.NetworkIsolated }},
		"memory":                    {change: func(s *dsv1alpha1.SandboxSpec) { s.Resources.Memory = resource.MustParse("1Gi") }},
		"mount path":                {change: func(s *dsv1alpha1.SandboxSpec) { s.Workspace.MountPath = "/work" }},
		"runAsRoot":                 {change: func(s *dsv1alpha1.SandboxSpec) { s.RunAsRoot = true }},
		"writable root":             {change: func(s *dsv1alpha1.SandboxSpec) { s.RootFilesystem = writable("1Gi") }},
		"read-only root, spelt out": {change: func(s *dsv1alpha1.SandboxSpec) { s.RootFilesystem.Mode = dsv1alpha1.RootFilesystemReadOnly }, same: true, sameOwn: true},
		"service generation":        {change: func(*dsv1alpha1.SandboxSpec) {}, svcGen: 2, same: true, sameOwn: true},
	} {
		spec := *base.DeepCopy()
		tc.change(&spec)
		svc := db.DeepCopy()
		if tc.svcGen != 0 {
			svc.Generation = tc.svcGen
		}
		got := hash(spec, svc)
		g.Expect(got == h).To(Equal(tc.same), name)
		g.Expect(OwnSpecPart(got) == OwnSpecPart(h)).To(Equal(tc.sameOwn), name)
	}
	g.Expect(hash(base, nil)).NotTo(Equal(h), "a missing SandboxService changes the services half")
	replaced := db.DeepCopy()
	replaced.UID = "u2"
	g.Expect(hash(base, replaced)).NotTo(Equal(h), "a SandboxService deleted and made again changes the services half")
	g.Expect(len(h)).To(BeNumerically("<=", 64), "fits status.topologyHash")
}
