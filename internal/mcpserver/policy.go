package mcpserver

import (
	"fmt"
	"slices"
	"strings"

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
}

// Refusals name the rule that refused, and the flag that sets it.
const (
	namespaceRule = "--namespace"
	imageRule     = "--image"
	templateRule  = "--template"
	poolRule      = "--pool"
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

// sandbox refuses a Sandbox whose image the operator did not list: the server touches only what it could
// have made.
func (p Policy) sandbox(sbx *dsv1alpha1.Sandbox) error {
	if slices.Contains(p.Images, sbx.Spec.Image) {
		return nil
	}
	return fmt.Errorf("refused: Sandbox %q runs image %q, not one this server may use (%s: %s)", sbx.Name, sbx.Spec.Image, imageRule, p.listed())
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
