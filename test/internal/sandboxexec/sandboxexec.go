// Package sandboxexec opens an exec into a Sandbox through the API server's data plane group
// (subresources.dockside.dev) with client-go's executors, as kubectl exec does, for the suites that drive the
// data plane from outside.
package sandboxexec

import (
	"fmt"
	"net/url"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Executor is client-go's executor of protocol ("websocket" or "spdy") for the exec that query asks for
// (command, stdin, stdout, stderr, tty) in Sandbox ns/name.
func Executor(cfg *rest.Config, protocol, ns, name string, query url.Values) (remotecommand.Executor, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the API server's URL: %w", err)
	}
	u := base.JoinPath("apis/subresources.dockside.dev/v1alpha1/namespaces", ns, "sandboxes", name, "exec")
	u.RawQuery = query.Encode()
	var exec remotecommand.Executor
	if protocol == "websocket" {
		exec, err = remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	} else {
		exec, err = remotecommand.NewSPDYExecutor(cfg, "POST", u)
	}
	if err != nil {
		return nil, fmt.Errorf("a %s executor for %s: %w", protocol, u, err)
	}
	return exec, nil
}
