package topology

import (
	"reflect"
	"testing"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestCommandEnv(t *testing.T) {
	sandbox := []dsv1alpha1.ExecutionEnvVar{{Name: "TASK", Value: "claim"}, {Name: "USER_ID", Value: "7"}}
	command := []dsv1alpha1.ExecutionEnvVar{{Name: "TASK", Value: "exec"}, {Name: "DEBUG", Value: "1"}}
	got := CommandEnv(sandbox, command)
	want := []dd.EnvVar{{Name: "TASK", Value: "exec"}, {Name: "USER_ID", Value: "7"}, {Name: "DEBUG", Value: "1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CommandEnv = %v, want %v (the command's own wins, each name once)", got, want)
	}
	if got := CommandEnv(nil, nil); got != nil {
		t.Errorf("CommandEnv of nothing = %v, want nil", got)
	}
}
