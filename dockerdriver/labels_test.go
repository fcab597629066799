package dockerdriver

import (
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestOwnedNeedsManagedAndTheNode(t *testing.T) {
	g := NewWithT(t)
	l := Labels("node-a", Owner{UID: "u"}, dsv1alpha1.RolePrimary, "")
	g.Expect(Owned(l, "node-a")).To(BeTrue())
	g.Expect(Owned(l, "node-b")).To(BeFalse(), "another node's object")
	delete(l, dsv1alpha1.LabelManaged)
	g.Expect(Owned(l, "node-a")).To(BeFalse(), "labelled with the node but not made by Dockside")
}

func TestAdoptableComparesIdentityAndSubnet(t *testing.T) {
	g := NewWithT(t)
	spec := NetworkSpec{Name: "n", Owner: Owner{Name: "a", UID: "u", Generation: 1}, Subnet: "10.0.0.0/28"}
	want := NetworkLabels("node-a", spec)
	g.Expect(want).To(HaveKeyWithValue(dsv1alpha1.LabelSubnet, "10.0.0.0/28"))
	g.Expect(want).To(HaveKeyWithValue(dsv1alpha1.LabelRole, dsv1alpha1.RoleNetwork))

	have := NetworkLabels("node-a", spec)
	have["com.example.extra"] = "x"
	g.Expect(Adoptable(have, want)).To(BeTrue(), "labels outside the identity do not count")
	have[dsv1alpha1.LabelSubnet] = "10.0.0.16/28"
	g.Expect(Adoptable(have, want)).To(BeFalse(), "a network holding another subnet")
	spec.Subnet = ""
	g.Expect(NetworkLabels("node-a", spec)).NotTo(HaveKey(dsv1alpha1.LabelSubnet))
}
