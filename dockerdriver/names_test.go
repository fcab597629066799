package dockerdriver

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestNameIsDeterministicAndDistinct(t *testing.T) {
	g := NewWithT(t)
	o := Owner{Namespace: "team-a", Name: "agent-7", UID: "0b6c-uid", Generation: 3}
	g.Expect(Name(o, dsv1alpha1.RolePrimary, "")).To(Equal(Name(o, dsv1alpha1.RolePrimary, "")))
	g.Expect(Name(o, dsv1alpha1.RolePrimary, "")).To(MatchRegexp(`^dockside-team-a-agent-7-primary-[0-9a-f]{12}$`))

	variants := map[string]string{"base": Name(o, dsv1alpha1.RoleService, "db")}
	other := o
	other.UID = "other-uid"
	variants["uid"] = Name(other, dsv1alpha1.RoleService, "db")
	other = o
	other.Generation = 4
	variants["generation"] = Name(other, dsv1alpha1.RoleService, "db")
	variants["role"] = Name(o, dsv1alpha1.RolePrimary, "db")
	variants["service"] = Name(o, dsv1alpha1.RoleService, "cache")
	// The separator keeps ("a-b","c") and ("a","b-c") apart although their readable parts agree.
	variants["split"] = Name(Owner{Namespace: "team", Name: "a-agent-7", UID: o.UID, Generation: 3}, dsv1alpha1.RoleService, "db")
	seen := map[string]string{}
	for what, name := range variants {
		g.Expect(seen).NotTo(HaveKey(name), "changing %s must change the name", what)
		seen[name] = what
	}
}

func TestNameIsAValidBoundedDockerName(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("x", 253)
	for _, name := range []string{
		Name(Owner{Namespace: long, Name: long, UID: "u"}, dsv1alpha1.RoleService, long),
		Name(Owner{Namespace: "ns", Name: "name.with.dots", UID: "u"}, dsv1alpha1.RoleWorkspace, ""),
		NodeNetworkName("node/with:odd chars"),
	} {
		g.Expect(name).To(MatchRegexp(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`))
		g.Expect(len(name)).To(BeNumerically("<=", 128))
	}
	g.Expect(NodeNetworkName("n1")).NotTo(Equal(NodeNetworkName("n2")))
}

func TestLabelsRoundTrip(t *testing.T) {
	g := NewWithT(t)
	o := Owner{Namespace: "ns", Name: "sbx", UID: "uid-1", Generation: 2}
	l := Labels("node-a", o, dsv1alpha1.RoleService, "db")
	g.Expect(l).To(Equal(map[string]string{
		dsv1alpha1.LabelManaged: "true", dsv1alpha1.LabelNode: "node-a", dsv1alpha1.LabelNamespace: "ns", dsv1alpha1.LabelName: "sbx",
		dsv1alpha1.LabelUID: "uid-1", dsv1alpha1.LabelRole: dsv1alpha1.RoleService, dsv1alpha1.LabelService: "db", dsv1alpha1.LabelGeneration: "2",
	}))
	back, role, service := OwnerFromLabels(l)
	g.Expect(back).To(Equal(o))
	g.Expect(role).To(Equal(dsv1alpha1.RoleService))
	g.Expect(service).To(Equal("db"))

	shared := Labels("node-a", Owner{}, dsv1alpha1.RoleNetwork, "")
	g.Expect(shared).NotTo(HaveKey(dsv1alpha1.LabelUID))
	g.Expect(shared).NotTo(HaveKey(dsv1alpha1.LabelService))
	g.Expect(shared).To(HaveKeyWithValue(dsv1alpha1.LabelGeneration, "0"))
}

func TestIdentityMatchesIgnoresExtraLabels(t *testing.T) {
	g := NewWithT(t)
	want := Labels("n", Owner{Name: "a", UID: "u"}, dsv1alpha1.RoleNetwork, "")
	have := Labels("n", Owner{Name: "a", UID: "u"}, dsv1alpha1.RoleNetwork, "")
	have[dsv1alpha1.LabelSubnet] = "10.0.0.0/28"
	g.Expect(identityMatches(have, want)).To(BeTrue())
	have[dsv1alpha1.LabelUID] = "other"
	g.Expect(identityMatches(have, want)).To(BeFalse())
	g.Expect(identityMatches(map[string]string{}, want)).To(BeFalse())
}

func TestBridgeNameFitsLinuxAndKeepsItsPrefix(t *testing.T) {
	for _, prefix := range []string{BridgeProxied, BridgeClosed, BridgeOpen} {
		name := BridgeName(prefix, "dockside-some-very-long-network-name-0123456789")
		if len(name) != maxInterfaceName || name[:len(prefix)] != prefix {
			t.Errorf("BridgeName(%q) = %q: want %d characters starting with the prefix", prefix, name, maxInterfaceName)
		}
		if !bridgeName.MatchString(name) {
			t.Errorf("BridgeName(%q) = %q is refused by NetworkSpec.Validate", prefix, name)
		}
	}
	if BridgeName(BridgeOpen, "a") == BridgeName(BridgeOpen, "b") {
		t.Error("two networks got one bridge name")
	}
}
