// Package e2b is the gateway that serves E2B's API in front of Dockside (docs/e2b.md): the control plane
// (sandboxes created from SandboxTemplates, warm through a SandboxWarmPool's claim or cold, listed, timed out,
// paused and killed) and the in-sandbox API "envd" (the process and filesystem Connect services, /files),
// which it serves through Dockside's data plane. Every call it makes is made with the caller's own Kubernetes
// token, so that the API server's RBAC and audit see the caller; it keeps no state of its own.
package e2b
