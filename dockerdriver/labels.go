package dockerdriver

import (
	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// The label rules below are exported so that the fake driver (dockerdriver/fake) applies the very same ones
// and cannot drift from this driver on what it owns and what it adopts.

// Owned tells whether labels mark an object that the driver of node made. Anything else is foreign to
// that driver, whatever its name: never adopted, observed, removed or joined.
func Owned(labels map[string]string, node string) bool {
	return labels[dsv1alpha1.LabelManaged] == "true" && labels[dsv1alpha1.LabelNode] == node
}

// NetworkLabels is the label set EnsureNetwork gives a network: Labels of its owner in the network role,
// and the subnet it holds when one was asked for, so that a restarted agent knows which ranges are taken.
func NetworkLabels(node string, spec NetworkSpec) map[string]string {
	l := Labels(node, spec.Owner, dsv1alpha1.RoleNetwork, "")
	if spec.Subnet != "" {
		l[dsv1alpha1.LabelSubnet] = spec.Subnet
	}
	return l
}

// Adoptable tells whether an existing object labelled have may be adopted by an ensure that would label
// it want: the identity labels and the subnet must match. Other labels do not count.
func Adoptable(have, want map[string]string) bool {
	return identityMatches(have, want) && have[dsv1alpha1.LabelSubnet] == want[dsv1alpha1.LabelSubnet]
}
