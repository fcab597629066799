// Package dataplane serves the aggregated API group subresources.dockside.dev: exec (and the mount points of
// files and port-forward) on Sandboxes, reached through kube-apiserver, which authenticates the caller and
// passes it on in front-proxy headers. Every agent serves it; a request for a Sandbox of another node is
// forwarded to that node's agent. docs/design/dataplane.md says what and why.
package dataplane

import "k8s.io/apimachinery/pkg/runtime/schema"

// Group and Version of the aggregated API.
const (
	Group   = "subresources.dockside.dev"
	Version = "v1alpha1"
)

// GroupVersion is the aggregated API's group and version.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// Subresources of a Sandbox the API serves. Each is authorized as its own subresource of sandboxes in Group.
const (
	Exec        = "exec"
	Files       = "files"
	PortForward = "portforward"
	Processes   = "processes"
)
