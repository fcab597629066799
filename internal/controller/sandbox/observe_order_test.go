package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestRemovalOrder(t *testing.T) {
	g := NewWithT(t)
	owner := dd.Owner{Namespace: "ns", Name: "s", UID: "u", Generation: 1}
	info := func(role, svc string) dd.ContainerInfo {
		return dd.ContainerInfo{Name: dd.Name(owner, role, svc), Labels: dd.Labels("n", owner, role, svc)}
	}
	byName := map[string]dd.ContainerInfo{}
	for _, c := range []dd.ContainerInfo{
		info(dsv1alpha1.RoleHolder, ""), info(dsv1alpha1.RoleService, "a"), info(dsv1alpha1.RolePrimary, ""),
		info(dsv1alpha1.RoleService, "gone"), info(dsv1alpha1.RoleService, "b"),
	} {
		byName[c.Name] = c
	}
	var order []string
	for _, c := range removalOrder(byName, []string{"a", "b"}) {
		_, role, svc := dd.OwnerFromLabels(c.Labels)
		order = append(order, role+":"+svc)
	}
	g.Expect(order).To(Equal([]string{"primary:", "service:b", "service:a", "service:gone", "holder:"}))
}
