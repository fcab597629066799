package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestTransient(t *testing.T) {
	g := NewWithT(t)
	cause := errors.New("cause")
	for _, err := range []error{
		apierrors.NewServiceUnavailable("etcd is unwell"),
		apierrors.NewTooManyRequests("slow down", 1),
		apierrors.NewInternalError(cause),
		apierrors.NewServerTimeout(sandboxes, "patch", 1),
		apierrors.NewTimeoutError("request timed out", 1),
		apierrors.NewGenericServerResponse(502, "patch", sandboxes, "s", "", 0, false),
		apierrors.NewGenericServerResponse(504, "patch", sandboxes, "s", "", 0, false),
		&url.Error{Op: "Patch", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}},
		&url.Error{Op: "Patch", URL: "https://127.0.0.1:6443", Err: syscall.ECONNRESET},
		&url.Error{Op: "Patch", URL: "https://127.0.0.1:6443", Err: io.ErrUnexpectedEOF},
		fmt.Errorf("patch: %w", context.DeadlineExceeded),
	} {
		g.Expect(Transient(err)).To(BeTrue(), "%v", err)
	}
	for _, err := range []error{
		nil,
		apierrors.NewConflict(sandboxes, "s", cause),
		apierrors.NewNotFound(sandboxes, "s"),
		apierrors.NewForbidden(sandboxes, "s", cause),
		apierrors.NewBadRequest("no"),
		context.Canceled,
		cause,
	} {
		g.Expect(Transient(err)).To(BeFalse(), "%v", err)
	}
}

func TestRetryTransient(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("etcd is unwell")
	forbidden := apierrors.NewForbidden(sandboxes, "s", errors.New("not allowed"))
	for _, tc := range []struct {
		name   string
		fails  int   // how many tries fail before one succeeds
		fault  error // what they fail with
		tries  int
		result error
	}{
		{name: "a write that succeeds is made once", tries: 1},
		{name: "a transient error is retried until the write succeeds", fails: 2, fault: unavailable, tries: 3},
		{name: "a transient error that persists is returned", fails: 10, fault: unavailable, tries: 4, result: unavailable},
		{name: "another error is returned at once", fails: 10, fault: forbidden, tries: 1, result: forbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tries := 0
			err := RetryTransient(context.Background(), func() error {
				tries++
				if tries <= tc.fails {
					return tc.fault
				}
				return nil
			})
			g.Expect(tries).To(Equal(tc.tries))
			if tc.result == nil {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(Equal(tc.result))
			}
		})
	}

	t.Run("a context that ended stops the retries", func(t *testing.T) {
		g := NewWithT(t)
		ctx, cancel := context.WithCancel(context.Background())
		tries := 0
		err := RetryTransient(ctx, func() error {
			tries++
			cancel()
			return unavailable
		})
		g.Expect(tries).To(Equal(1))
		g.Expect(err).To(Equal(unavailable))
	})
}

// TestPassEndOutlastsTransientErrors: a status write that meets a few transient errors stands once the API
// server answers again, within the same pass.
func TestPassEndOutlastsTransientErrors(t *testing.T) {
	g := NewWithT(t)
	failures := 2
	api := newAPIServer(t, stored(3))
	api.Client = interceptor.NewClient(api.Client.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if failures > 0 {
				failures--
				return apierrors.NewTooManyRequests("slow down", 0)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	obj := api.sandbox(t)
	pass := Begin(api, obj)
	obj.Status.Phase = dsv1alpha1.SandboxFailed

	var result ctrl.Result
	var reterr error
	g.Expect(pass.End(context.Background(), obj, &result, &reterr)).To(BeTrue())
	g.Expect(reterr).NotTo(HaveOccurred())
	g.Expect(result).To(BeZero())
	g.Expect(failures).To(BeZero())
	g.Expect(api.Writes).To(Equal(1), "the write that stood")
	g.Expect(api.sandbox(t).Status.Phase).To(Equal(dsv1alpha1.SandboxFailed))
}
