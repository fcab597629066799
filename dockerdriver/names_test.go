package dockerdriver

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	v1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestNameIsDeterministicAndDistinct(t *testing.T) {
	g := NewWithT(t)
	o := Owner{Namespace: "team-a", Name: "agent-7", UID: "0b6c-uid", Generation: 3}
	g.Expect(Name(o, v1.RolePrimary, "")).To(Equal(Name(o, v1.RolePrimary, "")))
	g.Expect(Name(o, v1.RolePrimary, "")).To(MatchRegexp(`^dockside-team-a-agent-7-primary-[0-9a-f]{12}$`))

	variants := map[string]string{"base": Name(o, v1.RoleService, "db")}
	other := o
	other.UID = "other-uid"
	variants["uid"] = Name(other, v1.RoleService, "db")
	other = o
	other.Generation = 4
	variants["generation"] = Name(other, v1.RoleService, "db")
	variants["role"] = Name(o, v1.RolePrimary, "db")
	variants["service"] = Name(o, v1.RoleService, "cache")
	// The separator keeps ("a-b","c") and ("a","b-c") apart although their readable parts agree.
	variants["split"] = Name(Owner{Namespace: "team", Name: "a-agent-7", UID: o.UID, Generation: 3}, v1.RoleService, "db")
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
		Name(Owner{Namespace: long, Name: long, UID: "u"}, v1.RoleService, long),
		Name(Owner{Namespace: "ns", Name: "name.with.dots", UID: "u"}, v1.RoleWorkspace, ""),
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
	l := Labels("node-a", o, v1.RoleService, "db")
	g.Expect(l).To(Equal(map[string]string{
		v1.LabelManaged: "true", v1.LabelNode: "node-a", v1.LabelNamespace: "ns", v1.LabelName: "sbx",
		v1.LabelUID: "uid-1", v1.LabelRole: v1.RoleService, v1.LabelService: "db", v1.LabelGeneration: "2",
	}))
	back, role, service := OwnerFromLabels(l)
	g.Expect(back).To(Equal(o))
	g.Expect(role).To(Equal(v1.RoleService))
	g.Expect(service).To(Equal("db"))

	shared := Labels("node-a", Owner{}, v1.RoleNetwork, "")
	g.Expect(shared).NotTo(HaveKey(v1.LabelUID))
	g.Expect(shared).NotTo(HaveKey(v1.LabelService))
	g.Expect(shared).To(HaveKeyWithValue(v1.LabelGeneration, "0"))
}

func TestIdentityMatchesIgnoresExtraLabels(t *testing.T) {
	g := NewWithT(t)
	want := Labels("n", Owner{Name: "a", UID: "u"}, v1.RoleNetwork, "")
	have := Labels("n", Owner{Name: "a", UID: "u"}, v1.RoleNetwork, "")
	have[v1.LabelSubnet] = "10.0.0.0/28"
	g.Expect(identityMatches(have, want)).To(BeTrue())
	have[v1.LabelUID] = "other"
	g.Expect(identityMatches(have, want)).To(BeFalse())
	g.Expect(identityMatches(map[string]string{}, want)).To(BeFalse())
}
