package status

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/testutil/faultapi"
)

var sandboxes = schema.GroupResource{Group: "dockside.dev", Resource: "sandboxes"}

// apiServer is a fake API server that counts status writes and fails the next one with Fault, when set.
type apiServer struct{ *faultapi.Server }

func newAPIServer(t *testing.T, objs ...client.Object) *apiServer {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return &apiServer{faultapi.New(scheme, []client.Object{&dsv1alpha1.Sandbox{}}, objs...)}
}

func (api *apiServer) sandbox(t *testing.T) *dsv1alpha1.Sandbox {
	t.Helper()
	obj := &dsv1alpha1.Sandbox{}
	if err := api.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "s"}, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// stored is the Sandbox as the API server holds it: at metadata generation gen, Running, its status
// observed at generation 2.
func stored(gen int64) *dsv1alpha1.Sandbox {
	obj := at(gen)
	obj.Status = dsv1alpha1.SandboxStatus{ObservedGeneration: 2, Phase: dsv1alpha1.SandboxRunning}
	return obj
}

func TestPassEnd(t *testing.T) {
	passErr := errors.New("the pass's own error")
	failed := func(obj *dsv1alpha1.Sandbox) { obj.Status.Phase = dsv1alpha1.SandboxFailed }
	conflict := apierrors.NewConflict(sandboxes, "s", errors.New("the object has been modified"))
	unavailable := apierrors.NewServiceUnavailable("etcd is unwell")
	forbidden := apierrors.NewForbidden(sandboxes, "s", errors.New("not allowed"))
	for _, tc := range []struct {
		name      string
		gen       int64                         // the object's metadata generation (its status observed 2)
		change    func(obj *dsv1alpha1.Sandbox) // what the pass did to the status; nil: nothing
		meanwhile bool                          // another writer changes the object after the pass read it
		passErr   error
		fault     error // the API server's answer to the write

		stands   bool
		writes   int
		requeue  bool    // RequeueAfter StaleRetry
		errs     []error // what reterr must hold; none: nil
		phase    dsv1alpha1.SandboxPhase
		observed int64 // status.observedGeneration stored after
	}{
		{
			name: "an unchanged status is not written, and stands", gen: 2,
			stands: true, phase: dsv1alpha1.SandboxRunning, observed: 2,
		},
		{
			name: "a generation not observed yet is written by an error-free pass", gen: 3,
			stands: true, writes: 1, phase: dsv1alpha1.SandboxRunning, observed: 3,
		},
		{
			name: "a changed status is written with its generation observed", gen: 3, change: failed,
			stands: true, writes: 1, phase: dsv1alpha1.SandboxFailed, observed: 3,
		},
		{
			name: "a pass that met an error writes its status, but not the generation as observed", gen: 3, change: failed, passErr: passErr,
			stands: true, writes: 1, errs: []error{passErr}, phase: dsv1alpha1.SandboxFailed, observed: 2,
		},
		{
			name: "an unchanged status of a pass that met an error is not written", gen: 3, passErr: passErr,
			stands: true, errs: []error{passErr}, phase: dsv1alpha1.SandboxRunning, observed: 2,
		},
		{
			name: "a conflict is a quiet, quick retry", gen: 3, change: failed, fault: conflict,
			writes: 1, requeue: true, phase: dsv1alpha1.SandboxRunning, observed: 2,
		},
		{
			name: "a conflict after the pass's own error leaves that error to back off", gen: 3, change: failed, passErr: passErr, fault: conflict,
			writes: 1, errs: []error{passErr}, phase: dsv1alpha1.SandboxRunning, observed: 2,
		},
		{
			name: "a write from a stale read is refused by the resourceVersion guard", gen: 3, change: failed, meanwhile: true,
			writes: 1, requeue: true, phase: dsv1alpha1.SandboxRunning, observed: 2,
		},
		{
			name: "an object gone is no error", gen: 3, change: failed, fault: apierrors.NewNotFound(sandboxes, "s"),
			writes: 1, requeue: true, phase: dsv1alpha1.SandboxRunning, observed: 2,
		},
		{
			name: "a transient error is retried within the pass", gen: 3, change: failed, fault: unavailable,
			stands: true, writes: 2, phase: dsv1alpha1.SandboxFailed, observed: 3,
		},
		{
			name: "another error is returned", gen: 3, change: failed, fault: forbidden,
			writes: 1, errs: []error{forbidden}, phase: dsv1alpha1.SandboxRunning, observed: 2,
		},
		{
			name: "another error is joined to the pass's own", gen: 3, change: failed, passErr: passErr, fault: forbidden,
			writes: 1, errs: []error{passErr, forbidden}, phase: dsv1alpha1.SandboxRunning, observed: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			api := newAPIServer(t, stored(tc.gen))
			obj := api.sandbox(t)
			pass := Begin(api, obj)
			if tc.meanwhile {
				other := api.sandbox(t)
				other.Labels = map[string]string{"touched": "yes"}
				g.Expect(api.Update(context.Background(), other)).To(Succeed())
			}
			if tc.change != nil {
				tc.change(obj)
			}
			api.Fault = tc.fault

			var result ctrl.Result
			reterr := tc.passErr
			stands := pass.End(context.Background(), obj, &result, &reterr)

			g.Expect(stands).To(Equal(tc.stands), "stands")
			g.Expect(api.Writes).To(Equal(tc.writes), "status writes")
			if tc.requeue {
				g.Expect(result).To(Equal(ctrl.Result{RequeueAfter: StaleRetry}))
			} else {
				g.Expect(result).To(BeZero())
			}
			if len(tc.errs) == 0 {
				g.Expect(reterr).NotTo(HaveOccurred())
			}
			for _, err := range tc.errs {
				g.Expect(errors.Is(reterr, err)).To(BeTrue(), "reterr %v holds %v", reterr, err)
			}
			after := api.sandbox(t)
			g.Expect(after.Status.Phase).To(Equal(tc.phase), "phase stored")
			g.Expect(after.Status.ObservedGeneration).To(Equal(tc.observed), "observedGeneration stored")
			g.Expect(pass.Before().Status.Phase).To(Equal(dsv1alpha1.SandboxRunning), "the snapshot is the object as the pass found it")
		})
	}
}

func TestRequeueOnConflict(t *testing.T) {
	g := NewWithT(t)
	res, err := RequeueOnConflict(apierrors.NewConflict(sandboxes, "s", errors.New("stale")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ctrl.Result{RequeueAfter: StaleRetry}))

	other := apierrors.NewServiceUnavailable("etcd is unwell")
	res, err = RequeueOnConflict(other)
	g.Expect(err).To(Equal(other))
	g.Expect(res).To(BeZero())

	res, err = RequeueOnConflict(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(BeZero())
}
