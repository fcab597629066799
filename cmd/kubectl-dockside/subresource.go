package main

import (
	"fmt"
	"net/http"
	"net/url"

	"k8s.io/client-go/rest"
)

// subresourceURL is the URL of one of a Sandbox's subresources (exec, files, portforward, processes) of the
// aggregated API group subresources.dockside.dev, on the API server of cfg (docs/design/dataplane.md).
func subresourceURL(cfg *rest.Config, ns, sandbox, subresource string) (*url.URL, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's address: %w", err)
	}
	return base.JoinPath("apis/subresources.dockside.dev/v1alpha1/namespaces", ns, "sandboxes", sandbox, subresource), nil
}

// subresourceClient is an HTTP client of the API server with the kubeconfig's credentials, and the URL of the
// Sandbox's subresource, for the subresources served as plain HTTP calls (files, processes).
func subresourceClient(cfg *rest.Config, ns, sandbox, subresource string) (*http.Client, *url.URL, error) {
	u, err := subresourceURL(cfg, ns, sandbox, subresource)
	if err != nil {
		return nil, nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("making the API client: %w", err)
	}
	return hc, u, nil
}
