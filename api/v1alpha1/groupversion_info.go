// Package v1alpha1 holds the dockside.dev/v1alpha1 API: the Sandbox, SandboxService and Checkpoint kinds and the
// constants (condition types, reasons, finalizers, field paths, label keys) that the agent and its users share.
// Types and constants only: behaviour lives in the controllers.
//
// +kubebuilder:object:generate=true
// +groupName=dockside.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "dockside.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme. It is apimachinery's, so that
	// a user of the API does not need controller-runtime for it.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// register adds kinds to SchemeBuilder; each kind's file calls it from init.
func register(objects ...runtime.Object) {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objects...)
		return nil
	})
}
