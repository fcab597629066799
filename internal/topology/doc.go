// Package topology is what every reconciler agrees on about the Docker objects of one Sandbox: their names
// at a topology generation, the pieces of their specs that more than one package reads (resource limits,
// the workspace's size and mount, the node's shared bridges), the hash that says when a topology must roll,
// and how a container's state reads. It holds no reconciler and imports none (docs/design/layout.md).
package topology
