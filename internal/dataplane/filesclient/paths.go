package filesclient

import dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"

// WorkingDir is where a Sandbox's relative paths start, as its own commands take them: its working
// directory, else its workspace's mount path (docs/e2b.md).
func WorkingDir(sbx *dsv1alpha1.Sandbox) string {
	switch {
	case sbx.Spec.WorkingDir != "":
		return sbx.Spec.WorkingDir
	case sbx.Spec.Workspace.MountPath != "":
		return sbx.Spec.Workspace.MountPath
	}
	return "/workspace"
}
