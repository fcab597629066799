//go:build integration

package e2b_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/e2b"
	"github.com/dockside-dev/dockside/test/internal/namespaces"
)

// tenant is a namespace with a ServiceAccount whose token is the E2B key.
type tenant struct {
	ns  string
	key string
}

// newTenant makes a namespace and a ServiceAccount in it; with allowed, a Role lets it use the gateway.
func newTenant(allowed bool) tenant {
	GinkgoHelper()
	ns, err := namespaces.Create(ctx(), k8s, "e2b")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(c context.Context) {
		Expect(k8s.DeleteAllOf(c, &dsv1alpha1.SandboxClaim{}, client.InNamespace(ns))).To(Succeed())
		Expect(k8s.DeleteAllOf(c, &dsv1alpha1.SandboxWarmPool{}, client.InNamespace(ns))).To(Succeed())
		Expect(k8s.DeleteAllOf(c, &dsv1alpha1.SandboxTemplate{}, client.InNamespace(ns))).To(Succeed())
		Expect(namespaces.Delete(c, k8s, ns)).To(Succeed())
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}}
	Expect(k8s.Create(ctx(), sa)).To(Succeed())
	if allowed {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2b"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"dockside.dev"}, Resources: []string{"sandboxes", "sandboxclaims"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
			{APIGroups: []string{"dockside.dev"}, Resources: []string{"sandboxtemplates", "sandboxwarmpools"}, Verbs: []string{"get", "list"}},
		}}
		Expect(k8s.Create(ctx(), role)).To(Succeed())
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2b"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "e2b"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent", Namespace: ns}}}
		Expect(k8s.Create(ctx(), rb)).To(Succeed())
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(k8s.SubResource("token").Create(ctx(), sa, req)).To(Succeed())
	return tenant{ns: ns, key: req.Status.Token}
}

func template(ns, name string) {
	GinkgoHelper()
	tpl := &dsv1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: dsv1alpha1.SandboxTemplateSpec{
			Sandbox:        dsv1alpha1.SandboxSpec{Image: "dockside.dev/busybox:local"},
			ClaimOverrides: []dsv1alpha1.ClaimOverride{dsv1alpha1.OverrideEnv, dsv1alpha1.OverrideActiveDeadlineSeconds},
		}}
	Expect(k8s.Create(ctx(), tpl)).To(Succeed())
}

// call sends method path with body (nil: none) and key, and decodes the JSON answer into out (nil: dropped).
func call(key, method, path string, body any, out any) int {
	GinkgoHelper()
	return callAt(gateway.URL, key, method, path, body, out)
}

// callAt is call to the gateway at url.
func callAt(url, key, method, path string, body any, out any) int {
	GinkgoHelper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx(), method, url+path, rd)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	if out != nil && len(data) > 0 {
		Expect(json.Unmarshal(data, out)).To(Succeed(), string(data))
	}
	return resp.StatusCode
}

// markReady does what an agent would: the Sandbox name of ns becomes Ready, started now.
func markReady(ns, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var sbx dsv1alpha1.Sandbox
		g.Expect(k8s.Get(ctx(), client.ObjectKey{Namespace: ns, Name: name}, &sbx)).To(Succeed())
		now := metav1.Now()
		sbx.Status.StartTime = &now
		meta.SetStatusCondition(&sbx.Status.Conditions, metav1.Condition{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: dsv1alpha1.ReasonRunning, Message: "test", ObservedGeneration: sbx.Generation})
		g.Expect(k8s.Status().Update(ctx(), &sbx)).To(Succeed())
	}).Should(Succeed())
}

// readyEveryNew marks every Sandbox of ns Ready as it appears, until the spec ends.
func readyEveryNew(ns string) {
	c, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	go func() {
		defer GinkgoRecover()
		for c.Err() == nil {
			var list dsv1alpha1.SandboxList
			if k8s.List(c, &list, client.InNamespace(ns)) == nil {
				for i := range list.Items {
					sbx := &list.Items[i]
					if rc := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionReady); rc == nil || rc.ObservedGeneration < sbx.Generation {
						now := metav1.Now()
						sbx.Status.StartTime = &now
						meta.SetStatusCondition(&sbx.Status.Conditions, metav1.Condition{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
							Reason: dsv1alpha1.ReasonRunning, Message: "test", ObservedGeneration: sbx.Generation})
						_ = k8s.Status().Update(c, sbx)
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
}

type created struct {
	SandboxID       string `json:"sandboxID"`
	TemplateID      string `json:"templateID"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken"`
	// TrafficAccessToken is null unless the create asked network.allowPublicTraffic false.
	TrafficAccessToken *string `json:"trafficAccessToken"`
}

type detail struct {
	SandboxID  string            `json:"sandboxID"`
	TemplateID string            `json:"templateID"`
	State      string            `json:"state"`
	StartedAt  time.Time         `json:"startedAt"`
	EndAt      time.Time         `json:"endAt"`
	Metadata   map[string]string `json:"metadata"`
}

type e2bError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

var _ = Describe("The E2B gateway", func() {
	It("creates a Sandbox cold from the template when no pool has it, and lists, times out, pauses, connects and kills it", func() {
		a := newTenant(true)
		template(a.ns, "base")
		readyEveryNew(a.ns)

		var sb created
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{
			"templateID": "base", "timeout": 120, "metadata": map[string]string{"owner": "ann"}, "envVars": map[string]string{"GREETING": "hi"},
		}, &sb)).To(Equal(http.StatusCreated))
		Expect(sb.TemplateID).To(Equal("base"))
		Expect(sb.EnvdVersion).NotTo(BeEmpty())
		Expect(sb.ClientID).NotTo(BeEmpty())
		Expect(sb.EnvdAccessToken).To(Equal(a.key), "the SDK sends it to envd, where it is the caller's key again")

		var sbx dsv1alpha1.Sandbox
		Expect(k8s.Get(ctx(), client.ObjectKey{Namespace: a.ns, Name: sb.SandboxID}, &sbx)).To(Succeed())
		Expect(sbx.Labels).To(HaveKeyWithValue(e2b.LabelTemplate, "base"))
		Expect(sbx.Annotations).To(HaveKeyWithValue(e2b.AnnotationMetadata, `{"owner":"ann"}`))
		Expect(sbx.Spec.Image).To(Equal("dockside.dev/busybox:local"))
		Expect(sbx.Spec.ActiveDeadlineSeconds).To(HaveValue(BeEquivalentTo(120)))
		Expect(sbx.Spec.CommandEnv).To(ContainElement(dsv1alpha1.ExecutionEnvVar{Name: "GREETING", Value: "hi"}))

		var list []detail
		Expect(call(a.key, http.MethodGet, "/v2/sandboxes?metadata=owner%3Dann", nil, &list)).To(Equal(http.StatusOK))
		Expect(list).To(HaveLen(1))
		Expect(list[0].SandboxID).To(Equal(sb.SandboxID))
		Expect(list[0].State).To(Equal("running"))
		Expect(list[0].Metadata).To(Equal(map[string]string{"owner": "ann"}))
		Expect(call(a.key, http.MethodGet, "/v2/sandboxes?metadata=owner%3Dbob", nil, &list)).To(Equal(http.StatusOK))
		Expect(list).To(BeEmpty())

		Expect(call(a.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/timeout", map[string]any{"timeout": 3600}, nil)).To(Equal(http.StatusNoContent))
		var d detail
		Expect(call(a.key, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &d)).To(Equal(http.StatusOK))
		Expect(time.Until(d.EndAt)).To(BeNumerically("~", time.Hour, time.Minute))
		Expect(k8s.Get(ctx(), client.ObjectKeyFromObject(&sbx), &sbx)).To(Succeed())
		Expect(*sbx.Spec.ActiveDeadlineSeconds).To(BeNumerically(">=", 3600))

		// A second gateway (or this one restarted) knows the sandbox as well: the API server is the only store.
		other, err := e2b.New(e2b.Options{API: env.Config, Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		second := httptest.NewServer(other)
		defer second.Close()
		var again detail
		Expect(callAt(second.URL, a.key, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &again)).To(Equal(http.StatusOK))
		Expect(again).To(Equal(d))

		Expect(call(a.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/pause", nil, nil)).To(Equal(http.StatusNoContent))
		Expect(call(a.key, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &d)).To(Equal(http.StatusOK))
		Expect(d.State).To(Equal("paused"))
		var e e2bError
		Expect(call(a.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/pause", nil, &e)).To(Equal(http.StatusConflict))
		Expect(e.Code).To(Equal(http.StatusConflict))
		Expect(call(a.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/connect", map[string]any{"timeout": 60}, &sb)).To(Equal(http.StatusCreated))
		Expect(k8s.Get(ctx(), client.ObjectKeyFromObject(&sbx), &sbx)).To(Succeed())
		Expect(sbx.Spec.Lifecycle).To(Equal(dsv1alpha1.LifecycleRunning))
		Expect(call(a.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/connect", map[string]any{"timeout": 60}, &sb)).To(Equal(http.StatusOK))

		Expect(call(a.key, http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil, nil)).To(Equal(http.StatusNoContent))
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKeyFromObject(&sbx), &sbx))
		}).Should(BeTrue())
		Expect(call(a.key, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &e)).To(Equal(http.StatusNotFound))
		Expect(e.Code).To(Equal(http.StatusNotFound))
	})

	It("claims from the template's warm pool when there is one, marks it secure and private, and kills the claim with the sandbox", func() {
		a := newTenant(true)
		template(a.ns, "base")
		pool := &dsv1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "base-pool"},
			Spec: dsv1alpha1.SandboxWarmPoolSpec{TemplateRef: dsv1alpha1.LocalObjectReference{Name: "base"}, Replicas: 1}}
		Expect(k8s.Create(ctx(), pool)).To(Succeed())
		warm := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "base-pool-0", Labels: map[string]string{dsv1alpha1.LabelPool: "base-pool"}},
			Spec: dsv1alpha1.SandboxSpec{Image: "dockside.dev/busybox:local"}}
		Expect(k8s.Create(ctx(), warm)).To(Succeed())
		markReady(a.ns, warm.Name)

		// The claim reconciler's part: bind the claim the gateway makes to the warm Sandbox.
		bound := make(chan string, 1)
		go func() {
			defer GinkgoRecover()
			Eventually(func(g Gomega) {
				var claims dsv1alpha1.SandboxClaimList
				g.Expect(k8s.List(ctx(), &claims, client.InNamespace(a.ns))).To(Succeed())
				g.Expect(claims.Items).To(HaveLen(1))
				cl := &claims.Items[0]
				var sbx dsv1alpha1.Sandbox
				g.Expect(k8s.Get(ctx(), client.ObjectKeyFromObject(warm), &sbx)).To(Succeed())
				sbx.Labels[dsv1alpha1.LabelClaim] = cl.Name
				g.Expect(k8s.Update(ctx(), &sbx)).To(Succeed())
				cl.Status.SandboxName = warm.Name
				cl.Status.Start = dsv1alpha1.ClaimWarm
				g.Expect(k8s.Status().Update(ctx(), cl)).To(Succeed())
				bound <- cl.Name
			}).Should(Succeed())
		}()

		var sb created
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "base", "timeout": 300, "envVars": map[string]string{"A": "1"}, "metadata": map[string]string{"k": "v"},
			"secure": true, "network": map[string]any{"allowPublicTraffic": false}}, &sb)).To(Equal(http.StatusCreated))
		Expect(sb.SandboxID).To(Equal(warm.Name))
		Expect(sb.TrafficAccessToken).To(HaveValue(HaveLen(64)), "allowPublicTraffic false gives the sandbox a traffic token")
		claimName := <-bound
		var cl dsv1alpha1.SandboxClaim
		Expect(k8s.Get(ctx(), client.ObjectKey{Namespace: a.ns, Name: claimName}, &cl)).To(Succeed())
		Expect(cl.Spec.PoolRef.Name).To(Equal("base-pool"))
		Expect(cl.Spec.ActiveDeadlineSeconds).To(HaveValue(BeEquivalentTo(300)))
		Expect(cl.Spec.Env).To(Equal([]dsv1alpha1.ExecutionEnvVar{{Name: "A", Value: "1"}}))
		var sbx dsv1alpha1.Sandbox
		Expect(k8s.Get(ctx(), client.ObjectKeyFromObject(warm), &sbx)).To(Succeed())
		Expect(sbx.Labels).To(HaveKeyWithValue(e2b.LabelTemplate, "base"))
		Expect(sbx.Annotations).To(HaveKeyWithValue(e2b.AnnotationMetadata, `{"k":"v"}`))
		Expect(sbx.Annotations).To(HaveKeyWithValue(e2b.AnnotationSecure, "true"))
		Expect(sbx.Annotations).To(HaveKeyWithValue(e2b.AnnotationTrafficToken, *sb.TrafficAccessToken), "kept in the API server, on the claimed Sandbox")
		var again created
		Expect(call(a.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/connect", map[string]any{}, &again)).To(Equal(http.StatusOK))
		Expect(again.TrafficAccessToken).To(Equal(sb.TrafficAccessToken), "connect answers the same token, from the annotation")
		var list []detail
		Expect(call(a.key, http.MethodGet, "/sandboxes", nil, &list)).To(Equal(http.StatusOK))
		Expect(list).To(ConsistOf(HaveField("SandboxID", warm.Name)))

		Expect(call(a.key, http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil, nil)).To(Equal(http.StatusNoContent))
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKeyFromObject(&cl), &cl))
		}).Should(BeTrue(), "the claim goes, and the claim reconciler deletes its Sandbox with it")
	})

	It("refuses a create whose Sandbox cannot start in E2B's shape, and leaves nothing behind", func() {
		a := newTenant(true)
		template(a.ns, "base")
		// The agent's part: the Sandbox is refused for good (Stalled).
		go func() {
			defer GinkgoRecover()
			Eventually(func(g Gomega) {
				var list dsv1alpha1.SandboxList
				g.Expect(k8s.List(ctx(), &list, client.InNamespace(a.ns))).To(Succeed())
				g.Expect(list.Items).To(HaveLen(1))
				sbx := &list.Items[0]
				meta.SetStatusCondition(&sbx.Status.Conditions, metav1.Condition{Type: dsv1alpha1.ConditionStalled, Status: metav1.ConditionTrue,
					Reason: "ImageNotAllowed", Message: "the image is not allowed here", ObservedGeneration: sbx.Generation})
				g.Expect(k8s.Status().Update(ctx(), sbx)).To(Succeed())
			}).Should(Succeed())
		}()
		var e e2bError
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "base"}, &e)).To(Equal(http.StatusBadRequest))
		Expect(e.Code).To(Equal(http.StatusBadRequest))
		Expect(e.Message).To(ContainSubstring("the image is not allowed here"))
		Eventually(func(g Gomega) {
			var list dsv1alpha1.SandboxList
			g.Expect(k8s.List(ctx(), &list, client.InNamespace(a.ns))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		}).Should(Succeed())

		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "nope"}, &e)).To(Equal(http.StatusNotFound))
		Expect(e.Message).To(ContainSubstring(`template "nope"`))
	})

	It("lets a key see and touch only its own namespace, as RBAC decides", func() {
		a, b, none := newTenant(true), newTenant(true), newTenant(false)
		template(a.ns, "base")
		readyEveryNew(a.ns)
		var sb created
		Expect(call(a.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "base"}, &sb)).To(Equal(http.StatusCreated))

		var e e2bError
		Expect(call(b.key, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &e)).To(Equal(http.StatusNotFound))
		Expect(call(b.key, http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil, &e)).To(Equal(http.StatusNotFound))
		Expect(call(b.key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/timeout", map[string]any{"timeout": 10}, &e)).To(Equal(http.StatusNotFound))
		var list []detail
		Expect(call(b.key, http.MethodGet, "/sandboxes", nil, &list)).To(Equal(http.StatusOK))
		Expect(list).To(BeEmpty())
		Expect(call(b.key, http.MethodPost, "/sandboxes", map[string]any{"templateID": "base"}, &e)).To(Equal(http.StatusNotFound))
		Expect(e.Message).To(ContainSubstring("template"))

		Expect(call(none.key, http.MethodGet, "/sandboxes", nil, &e)).To(Equal(http.StatusForbidden))
		Expect(e.Code).To(Equal(http.StatusForbidden))
		Expect(e.Message).To(ContainSubstring("system:serviceaccount:" + none.ns + ":agent"))
		Expect(call("not-a-token", http.MethodGet, "/sandboxes", nil, &e)).To(Equal(http.StatusUnauthorized))

		var sbx dsv1alpha1.Sandbox
		Expect(k8s.Get(ctx(), client.ObjectKey{Namespace: a.ns, Name: sb.SandboxID}, &sbx)).To(Succeed())
		Expect(sbx.DeletionTimestamp).To(BeNil(), "nothing the other keys did reached it")
	})
})
