package egress

import (
	"context"
	"net/netip"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

const image = "dockside.dev/busybox:local"

func sandboxOf(name, uid string, mode dsv1alpha1.NetworkMode, allow ...string) *dsv1alpha1.Sandbox {
	return &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID(uid)},
		Spec:       dsv1alpha1.SandboxSpec{Image: image, Network: dsv1alpha1.Network{Mode: mode, Allow: allow}},
	}
}

// running starts a primary of sbx on a network of the fake daemon and returns its address.
func running(t *testing.T, docker *fake.Driver, sbx *dsv1alpha1.Sandbox) netip.Addr {
	t.Helper()
	ctx := context.Background()
	owner := dd.Owner{Namespace: sbx.Namespace, Name: sbx.Name, UID: string(sbx.UID), Generation: 1}
	if _, err := docker.EnsureNetwork(ctx, dd.NetworkSpec{Name: "dockside-test-net"}); err != nil {
		t.Fatal(err)
	}
	spec := dd.ContainerSpec{
		Name: dd.Name(owner, dsv1alpha1.RolePrimary, ""), Owner: owner, Role: dsv1alpha1.RolePrimary, Image: image,
		Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64}, Network: dd.NetworkAttachment{Name: "dockside-test-net"},
	}
	if _, err := docker.EnsureContainer(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := docker.StartContainer(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	c, err := docker.ObserveContainer(ctx, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	return netip.MustParseAddr(c.IP)
}

func newSources(t *testing.T, objs ...client.Object) (*SandboxSources, *fake.Driver) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	docker := fake.New("node-a")
	docker.AddImage(image, dd.ImageInfo{})
	reader := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return NewSandboxSources(docker, reader), docker
}

func TestSourcesKnowIsolatedSandboxesByTheirContainersAddress(t *testing.T) {
	g := NewWithT(t)
	isolated := sandboxOf("agent", "uid-1", dsv1alpha1.NetworkIsolated, "pypi.org:443")
	closed := sandboxOf("closed", "uid-2", dsv1alpha1.NetworkNone)
	open := sandboxOf("open", "uid-3", dsv1alpha1.NetworkUnrestricted)
	sources, docker := newSources(t, isolated, closed, open)
	ctx := context.Background()

	src, ok := sources.Lookup(ctx, running(t, docker, isolated))
	g.Expect(ok).To(BeTrue())
	g.Expect(src.Namespace + "/" + src.Name).To(Equal("team/agent"))
	g.Expect(src.Allow.Permits("pypi.org", 443)).To(BeTrue())
	g.Expect(src.Allow.Permits("evil.example", 443)).To(BeFalse(), "the Sandbox's own list, not an empty one")

	_, ok = sources.Lookup(ctx, running(t, docker, closed))
	g.Expect(ok).To(BeFalse(), "a None Sandbox is nobody the proxy serves")
	_, ok = sources.Lookup(ctx, running(t, docker, open))
	g.Expect(ok).To(BeFalse(), "nor is an Unrestricted one")
	_, ok = sources.Lookup(ctx, netip.MustParseAddr("10.99.200.200"))
	g.Expect(ok).To(BeFalse(), "an address no container holds")
}

func TestSourcesForgetAContainerThatIsGoneOrASandboxThatWasReplaced(t *testing.T) {
	g := NewWithT(t)
	old := sandboxOf("agent", "uid-old", dsv1alpha1.NetworkIsolated)
	sources, docker := newSources(t, old)
	ctx := context.Background()
	ip := running(t, docker, old)
	_, ok := sources.Lookup(ctx, ip)
	g.Expect(ok).To(BeTrue())

	owner := dd.Owner{Namespace: "team", Name: "agent", UID: "uid-old", Generation: 1}
	g.Expect(docker.RemoveContainer(ctx, dd.Name(owner, dsv1alpha1.RolePrimary, ""))).To(Succeed())
	_, ok = sources.Lookup(ctx, ip)
	g.Expect(ok).To(BeFalse(), "the remembered container is checked again, and it is gone")

	// A Sandbox of the same name made again: containers labelled with the old UID are not its own.
	sources2, docker2 := newSources(t, sandboxOf("agent", "uid-new", dsv1alpha1.NetworkIsolated))
	ip2 := running(t, docker2, old)
	_, ok = sources2.Lookup(ctx, ip2)
	g.Expect(ok).To(BeFalse())
}
