package mcpserver

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Policy is what an operator lets the server touch: one namespace, and Sandboxes of the images listed. It
// confines what a model may ask for through this server; the API server's RBAC on the user's credentials
// still decides what the user may do at all.
type Policy struct {
	// Namespace is the one namespace every tool works in.
	Namespace string
	// Images are the image references, exactly as written in a Sandbox's spec, that create_sandbox may use and
	// that every other tool requires of the Sandbox it touches.
	Images []string
	// Templates and Pools name the SandboxTemplates and SandboxWarmPools create_sandbox may create from; each
	// template's image must be one of Images too.
	Templates, Pools []string
	// Caps are the most of each limit a Sandbox the server creates or touches may have.
	Caps Caps
	// SecretFiles lets the server touch Sandboxes that mount secret files. Off by default: such a Sandbox was
	// made by a person for a purpose, and a model driving this server could read the secrets out.
	SecretFiles bool
}

// Caps bound a Sandbox's limits; a create that leaves a limit out gets the cap. A zero cap bounds nothing.
type Caps struct {
	CPU, Memory, Workspace resource.Quantity
	Pids                   int64
}

// Refusals name the rule that refused, and the flag that sets it.
const (
	namespaceRule = "--namespace"
	imageRule     = "--image"
	templateRule  = "--template"
	poolRule      = "--pool"
	secretsRule   = "--allow-secret-files"
)

// namespace is the namespace a tool works in: the server's, whether asked for or not; another is refused.
func (p Policy) namespace(asked string) (string, error) {
	if asked != "" && asked != p.Namespace {
		return "", fmt.Errorf("refused: namespace %q is not this server's; it is confined to namespace %q (%s)", asked, p.Namespace, namespaceRule)
	}
	return p.Namespace, nil
}

// image refuses an image the operator did not list.
func (p Policy) image(image string) error {
	if slices.Contains(p.Images, image) {
		return nil
	}
	return fmt.Errorf("refused: image %q is not one this server may run (%s: %s)", image, imageRule, p.listed())
}

// template refuses a template the operator did not list.
func (p Policy) template(name string) error {
	return listedOr(p.Templates, name, "template", templateRule)
}

// pool refuses a pool the operator did not list.
func (p Policy) pool(name string) error {
	return listedOr(p.Pools, name, "pool", poolRule)
}

func listedOr(names []string, name, what, rule string) error {
	if slices.Contains(names, name) {
		return nil
	}
	listed := strings.Join(names, ", ")
	if listed == "" {
		listed = "none listed"
	}
	return fmt.Errorf("refused: %s %q is not one this server may create from (%s: %s)", what, name, rule, listed)
}

// sandbox refuses a Sandbox the server could not have made: an image the operator did not list, a network
// other than None and Isolated, secret files unless the operator allows them, or a limit over a cap. Without
// it a prompt-injected model could use a Sandbox a person made (Unrestricted, or holding secrets) by its name.
func (p Policy) sandbox(sbx *dsv1alpha1.Sandbox) error {
	spec := &sbx.Spec
	if !slices.Contains(p.Images, spec.Image) {
		return fmt.Errorf("refused: Sandbox %q runs image %q, not one this server may use (%s: %s)", sbx.Name, spec.Image, imageRule, p.listed())
	}
	if err := network(spec.Network.Mode); err != nil {
		return fmt.Errorf("for Sandbox %q, %w", sbx.Name, err)
	}
	if len(spec.SecretFiles) > 0 && !p.SecretFiles {
		return fmt.Errorf("refused: Sandbox %q mounts secret files, which this server touches only with %s", sbx.Name, secretsRule)
	}
	return p.Caps.within(sbx.Name, spec)
}

// network refuses a network mode a model may not have: Unrestricted reaches the host's networks.
func network(mode dsv1alpha1.NetworkMode) error {
	switch mode {
	case "", dsv1alpha1.NetworkNone, dsv1alpha1.NetworkIsolated:
		return nil
	}
	return fmt.Errorf("refused: network %q: this server uses Sandboxes of network None or Isolated only", mode)
}

// within refuses a spec with a limit over its cap. A zero limit is the kind's default, which the API server
// fills in on every object it stores; the server sets every capped limit of what it creates itself.
func (c Caps) within(name string, spec *dsv1alpha1.SandboxSpec) error {
	for _, q := range []struct {
		what, flag string
		have, most resource.Quantity
	}{
		{"cpu", "--max-cpu", spec.Resources.CPU, c.CPU},
		{"memory", "--max-memory", spec.Resources.Memory, c.Memory},
		{"workspace size", "--max-workspace", spec.Workspace.Size, c.Workspace},
	} {
		if !q.most.IsZero() && q.have.Cmp(q.most) > 0 {
			return fmt.Errorf("refused: Sandbox %q has %s %s, over this server's cap of %s (%s)", name, q.what, q.have.String(), q.most.String(), q.flag)
		}
	}
	if c.Pids > 0 && spec.Resources.Pids > c.Pids {
		return fmt.Errorf("refused: Sandbox %q has pids %d, over this server's cap of %d (--max-pids)", name, spec.Resources.Pids, c.Pids)
	}
	return nil
}

// fill sets each limit a create left out to its cap, so that what the server makes is within its caps
// whatever the kind's defaults are.
func (c Caps) fill(spec *dsv1alpha1.SandboxSpec) {
	for _, q := range []struct {
		into *resource.Quantity
		most resource.Quantity
	}{{&spec.Resources.CPU, c.CPU}, {&spec.Resources.Memory, c.Memory}, {&spec.Workspace.Size, c.Workspace}} {
		if q.into.IsZero() {
			*q.into = q.most
		}
	}
	if spec.Resources.Pids == 0 {
		spec.Resources.Pids = c.Pids
	}
}

func (p Policy) listed() string {
	if len(p.Images) == 0 {
		return "none listed"
	}
	return strings.Join(p.Images, ", ")
}

// instructions tell the host's model what the server is for and within which bounds.
func instructions(p Policy) string {
	from := "images: " + p.listed()
	if len(p.Templates) > 0 {
		from += "; templates: " + strings.Join(p.Templates, ", ")
	}
	if len(p.Pools) > 0 {
		from += "; warm pools, ready at once: " + strings.Join(p.Pools, ", ")
	}
	return fmt.Sprintf("Dockside Sandboxes: isolated containers to run code in. Create one with create_sandbox "+
		"(%s), then run_command, run_python (state persists between calls), read_file, write_file, "+
		"list_files, checkpoint; delete_sandbox when done. Everything happens in namespace %q.", from, p.Namespace)
}
