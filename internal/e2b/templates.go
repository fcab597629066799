package e2b

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// templateAliases are E2B's names of a template that Dockside knows by another: e2b_code_interpreter asks for
// code-interpreter-v1 by default, which is the SandboxTemplate code-interpreter unless the namespace has one
// of the E2B name itself (docs/e2b.md, "The code interpreter").
var templateAliases = map[string]string{"code-interpreter-v1": "code-interpreter"}

// getTemplate reads the SandboxTemplate a create's templateID names in the caller's namespace: the one of
// that name, else the one its alias names.
func getTemplate(ctx context.Context, c *caller, name string, tpl *dsv1alpha1.SandboxTemplate) error {
	err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, tpl)
	if alias, ok := templateAliases[name]; ok && apierrors.IsNotFound(err) {
		return c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: alias}, tpl) //nolint:wrapcheck // fromAPI reads the API server's error
	}
	return err //nolint:wrapcheck // as above
}
