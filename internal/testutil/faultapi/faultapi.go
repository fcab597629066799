// Package faultapi is a fake API server for the unit tests of code that writes objects: it counts the
// writes made to it (object and status PATCHes) and fails the next status write with a fault, when one is
// set, as a real API server answers a write it refuses (a conflict, a timeout).
package faultapi

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Server is the fake API server. Its fields are read and set by one test goroutine.
type Server struct {
	client.Client
	Writes int   // PATCHes of objects and of their status, failed ones included
	Fault  error // the answer to the next status PATCH, which then changes nothing; used once
}

// New stores objs in a Server of scheme; the kinds in withStatus have a status subresource.
func New(scheme *runtime.Scheme, withStatus []client.Object, objs ...client.Object) *Server {
	s := &Server{}
	s.Client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(withStatus...).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				s.Writes++
				return c.Patch(ctx, obj, patch, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				s.Writes++
				if err := s.Fault; err != nil {
					s.Fault = nil
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	return s
}
