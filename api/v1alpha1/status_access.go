package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The agent writes the status of every kind the same way (docs/design/status.md, "Status discipline"). These
// accessors let one helper do it for all four: the status to compare before and after a pass, its
// conditions, and the generation it has observed.

func (s *Sandbox) StatusValue() any                         { return s.Status }
func (s *Sandbox) StatusConditions() *[]metav1.Condition    { return &s.Status.Conditions }
func (s *Sandbox) SetObservedGeneration(generation int64)   { s.Status.ObservedGeneration = generation }
func (c *Checkpoint) StatusValue() any                      { return c.Status }
func (c *Checkpoint) StatusConditions() *[]metav1.Condition { return &c.Status.Conditions }
func (c *Checkpoint) SetObservedGeneration(generation int64) {
	c.Status.ObservedGeneration = generation
}
func (e *Execution) StatusValue() any                       { return e.Status }
func (e *Execution) StatusConditions() *[]metav1.Condition  { return &e.Status.Conditions }
func (e *Execution) SetObservedGeneration(generation int64) { e.Status.ObservedGeneration = generation }
func (s *SandboxService) StatusValue() any                  { return s.Status }
func (s *SandboxService) StatusConditions() *[]metav1.Condition {
	return &s.Status.Conditions
}
func (s *SandboxService) SetObservedGeneration(generation int64) {
	s.Status.ObservedGeneration = generation
}
func (p *SandboxWarmPool) StatusValue() any                      { return p.Status }
func (p *SandboxWarmPool) StatusConditions() *[]metav1.Condition { return &p.Status.Conditions }
func (p *SandboxWarmPool) SetObservedGeneration(generation int64) {
	p.Status.ObservedGeneration = generation
}
func (c *SandboxClaim) StatusValue() any                      { return c.Status }
func (c *SandboxClaim) StatusConditions() *[]metav1.Condition { return &c.Status.Conditions }
func (c *SandboxClaim) SetObservedGeneration(generation int64) {
	c.Status.ObservedGeneration = generation
}
