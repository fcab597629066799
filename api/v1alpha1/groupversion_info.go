// Package v1alpha1 holds the dockside.dev/v1alpha1 API: the Sandbox, SandboxService and Checkpoint kinds and the
// constants (condition types, reasons, finalizers, field paths, label keys) that the agent and its users share.
// Types and constants only: behaviour lives in the controllers.
//
// +kubebuilder:object:generate=true
// +groupName=dockside.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "dockside.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
