package mcpserver

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// A Sandbox a person made is used by this server only when the server could have made it itself: a model told
// its name by a prompt must not reach an Unrestricted network, secret files or limits over the caps.
func TestSandboxesOutsideThePolicyAreRefusedWithTheRule(t *testing.T) {
	unrestricted := sandbox("open", testImage)
	unrestricted.Spec.Network.Mode = dsv1alpha1.NetworkUnrestricted
	secrets := sandbox("secrets", testImage)
	secrets.Spec.SecretFiles = []dsv1alpha1.SecretFile{{SecretName: "key"}}
	big := sandbox("big", testImage)
	big.Spec.Resources.Memory = resource.MustParse("4Gi")
	h := newHarness(t, unrestricted, secrets, big)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"run_command", map[string]any{"sandbox": "open", "command": "true"}, `for Sandbox "open", refused: network "Unrestricted"`},
		{"read_file", map[string]any{"sandbox": "secrets", "path": "/run/secrets/key"}, `refused: Sandbox "secrets" mounts secret files, which this server touches only with --allow-secret-files`},
		{"run_python", map[string]any{"sandbox": "big", "code": "1"}, `refused: Sandbox "big" has memory 4Gi, over this server's cap of 1Gi (--max-memory)`},
		{"create_sandbox", map[string]any{"image": testImage, "cpu": "3"}, `refused: Sandbox "" has cpu 3, over this server's cap of 2 (--max-cpu)`},
		{"create_sandbox", map[string]any{"image": testImage, "pids": 4096}, `over this server's cap of 512 (--max-pids)`},
	} {
		if got := h.call(t.Context(), c.tool, c.args, nil); !strings.Contains(got, c.want) {
			t.Errorf("%s %v: %q, want it to contain %q", c.tool, c.args, got, c.want)
		}
	}
	var list dsv1alpha1.SandboxList
	if err := h.k8s.List(t.Context(), &list); err != nil || len(list.Items) != 3 {
		t.Fatalf("a refused create created: %d Sandboxes, %v", len(list.Items), err)
	}
}

// A create that gives no limits gets the caps, so what the server makes is within them whatever the kind's
// defaults are.
func TestCreateFillsLimitsWithTheCaps(t *testing.T) {
	caps := Caps{CPU: resource.MustParse("500m"), Memory: resource.MustParse("256Mi"), Workspace: resource.MustParse("64Mi"), Pids: 64}
	spec := dsv1alpha1.SandboxSpec{Resources: dsv1alpha1.Resources{Memory: resource.MustParse("128Mi")}}
	caps.fill(&spec)
	if spec.Resources.CPU.String() != "500m" || spec.Resources.Memory.String() != "128Mi" || spec.Workspace.Size.String() != "64Mi" || spec.Resources.Pids != 64 {
		t.Fatalf("filled %+v, %s: want cpu 500m, memory 128Mi as given, workspace 64Mi, pids 64", spec.Resources, spec.Workspace.Size.String())
	}
}

// list_files returns at most MaxListEntries (3 in the harness) and counts the rest.
func TestListFilesIsBounded(t *testing.T) {
	h := newHarness(t, sandbox("s", testImage))
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		h.dp.files["/workspace/"+name] = []byte(name)
	}
	var out listOutput
	h.call(t.Context(), "list_files", map[string]any{"sandbox": "s", "path": "/workspace"}, &out)
	if len(out.Entries) != 3 || out.Omitted != 2 {
		t.Fatalf("listed %d entries and omitted %d, want 3 and 2", len(out.Entries), out.Omitted)
	}
}

// The interpreter is the tenant's: a line longer than the bound ends the session instead of filling memory.
func TestReadLineIsBounded(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\nok\n"), 16)
	if _, err := readLine(r, 64); !errors.Is(err, errLineTooLong) {
		t.Fatalf("a 101-byte line under a 64-byte bound: %v, want errLineTooLong", err)
	}
	r = bufio.NewReaderSize(strings.NewReader(strings.Repeat("y", 40)+"\n"), 16)
	if line, err := readLine(r, 64); err != nil || len(line) != 41 {
		t.Fatalf("a 41-byte line: %q, %v", line, err)
	}
}
