package filesclient

import (
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Relative paths start at the working directory, else the workspace's mount path, else /workspace.
func TestWorkingDirIsTheWorkingDirectoryElseTheWorkspace(t *testing.T) {
	g := NewWithT(t)
	sbx := &dsv1alpha1.Sandbox{}
	g.Expect(WorkingDir(sbx)).To(Equal("/workspace"))
	sbx.Spec.Workspace.MountPath = "/data"
	g.Expect(WorkingDir(sbx)).To(Equal("/data"))
	sbx.Spec.WorkingDir = "/src"
	g.Expect(WorkingDir(sbx)).To(Equal("/src"))
}
