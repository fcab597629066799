package nodewatch

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestDrifted(t *testing.T) {
	g := NewWithT(t)
	owner := dd.Owner{Namespace: "ns", Name: "s", UID: "u"}
	container := func(role string, gen int64, state dd.ContainerState) dd.ContainerInfo {
		o := owner
		o.Generation = gen
		c := dd.ContainerInfo{Exists: true, ID: role, State: state, Labels: dd.Labels("n", o, role, "")}
		if state != dd.StateCreated {
			c.StartedAt = time.Now()
		}
		return c
	}
	running := func() *dsv1alpha1.Sandbox {
		return &dsv1alpha1.Sandbox{Status: dsv1alpha1.SandboxStatus{TopologyGeneration: 1, ContainerID: dsv1alpha1.RolePrimary}}
	}
	poisoned := func() *dsv1alpha1.Sandbox {
		sbx := running()
		meta.SetStatusCondition(&sbx.Status.Conditions, metav1.Condition{Type: dsv1alpha1.ConditionTopologyPoisoned, Status: metav1.ConditionTrue, Reason: "ServiceExited"})
		return sbx
	}
	paused := func() *dsv1alpha1.Sandbox {
		sbx := running()
		sbx.Spec.Lifecycle = dsv1alpha1.LifecyclePaused
		return sbx
	}
	holder := container(dsv1alpha1.RoleHolder, 0, dd.StateRunning)
	for name, tc := range map[string]struct {
		sbx  *dsv1alpha1.Sandbox
		held []dd.ContainerInfo
		want bool
	}{
		"as recorded":                 {sbx: running(), held: []dd.ContainerInfo{holder, container(dsv1alpha1.RolePrimary, 1, dd.StateRunning)}},
		"primary ended unseen":        {sbx: running(), held: []dd.ContainerInfo{holder, container(dsv1alpha1.RolePrimary, 1, dd.StateExited)}, want: true},
		"primary gone":                {sbx: running(), held: []dd.ContainerInfo{holder}, want: true},
		"holder stopped":              {sbx: running(), held: []dd.ContainerInfo{container(dsv1alpha1.RoleHolder, 0, dd.StateExited), container(dsv1alpha1.RolePrimary, 1, dd.StateRunning)}, want: true},
		"an older generation remains": {sbx: running(), held: []dd.ContainerInfo{holder, container(dsv1alpha1.RolePrimary, 1, dd.StateRunning), container(dsv1alpha1.RoleService, 0, dd.StateExited)}, want: true},
		"frozen behind its back":      {sbx: running(), held: []dd.ContainerInfo{holder, container(dsv1alpha1.RolePrimary, 1, dd.StatePaused)}, want: true},
		"paused as asked":             {sbx: paused(), held: []dd.ContainerInfo{holder, container(dsv1alpha1.RolePrimary, 1, dd.StatePaused)}},
		"poisoned and stopped":        {sbx: poisoned(), held: []dd.ContainerInfo{holder, container(dsv1alpha1.RolePrimary, 1, dd.StateExited)}},
		"poisoned but still running":  {sbx: poisoned(), held: []dd.ContainerInfo{holder, container(dsv1alpha1.RolePrimary, 1, dd.StateRunning)}, want: true},
	} {
		g.Expect(drifted(tc.sbx, &holdings{containers: tc.held})).To(Equal(tc.want), name)
	}
}
