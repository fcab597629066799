//go:build integration

package e2b_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/e2b"
)

var _ = Describe("The E2B gateway's template names", func() {
	It("reads code-interpreter-v1 as the SandboxTemplate code-interpreter, unless one has the E2B name itself", func() {
		a := newTenant(true)
		template(a.ns, "code-interpreter")
		readyEveryNew(a.ns)

		var sb created
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "code-interpreter-v1", "timeout": 60}, &sb)).To(Equal(http.StatusCreated))
		Expect(sb.TemplateID).To(Equal("code-interpreter"))
		var sbx dsv1alpha1.Sandbox
		Expect(k8s.Get(ctx(), client.ObjectKey{Namespace: a.ns, Name: sb.SandboxID}, &sbx)).To(Succeed())
		Expect(sbx.Labels).To(HaveKeyWithValue(e2b.LabelTemplate, "code-interpreter"))

		template(a.ns, "code-interpreter-v1")
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "code-interpreter-v1", "timeout": 60}, &sb)).To(Equal(http.StatusCreated))
		Expect(sb.TemplateID).To(Equal("code-interpreter-v1"))

		var e e2bError
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "code-interpreter-v2"}, &e)).To(Equal(http.StatusNotFound))
		Expect(e.Message).To(ContainSubstring(`template "code-interpreter-v2"`))
	})
})
