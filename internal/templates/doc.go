// Package templates is what the warm pool and claim reconcilers agree on about a SandboxTemplate: the digest
// that tells a pool's Sandboxes of an older template apart, the Sandbox a pool keeps warm, the Sandbox a claim
// gets started cold, and what a claim may set on either (docs/design/pools.md).
package templates
