//go:build integration

package controllers_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
	"github.com/dockside-dev/dockside/test/internal/loopback"
)

// The agent as the DaemonSet runs it: metrics over HTTPS, each scrape's bearer token checked with the API server
// (TokenReview) and its right to GET /metrics too (SubjectAccessReview), with the permissions config/rbac
// gives the agent and the confinement policies in force.
var _ = Describe("The metrics endpoint", func() {
	It("refuses a scrape without a token or by an identity without dockside-metrics-reader, and serves every metric of the Grafana dashboard", func() {
		ns := newNamespace()
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNamespace}}))).To(Succeed())
		clusterRole := map[string]func() client.Object{"ClusterRole": func() client.Object { return &rbacv1.ClusterRole{} }}
		clusterRoleBinding := map[string]func() client.Object{"ClusterRoleBinding": func() client.Object { return &rbacv1.ClusterRoleBinding{} }}
		applyRBAC("role.yaml", clusterRole)
		applyRBAC("role_binding.yaml", clusterRoleBinding)
		applyRBAC("metrics_auth_role.yaml", clusterRole)
		applyRBAC("metrics_auth_role_binding.yaml", clusterRoleBinding)
		applyRBAC("metrics_reader_role.yaml", clusterRole)
		applyRBAC("agent_confinement.yaml", map[string]func() client.Object{
			"ValidatingAdmissionPolicy":        func() client.Object { return &admissionv1.ValidatingAdmissionPolicy{} },
			"ValidatingAdmissionPolicyBinding": func() client.Object { return &admissionv1.ValidatingAdmissionPolicyBinding{} },
		})
		scraper, stranger := serviceAccountToken(ns, "scraper"), serviceAccountToken(ns, "stranger")
		readers := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-scraper"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "dockside-metrics-reader"}}
		create(readers)
		DeferCleanup(func() { Expect(k8s.Delete(ctx(), readers)).To(Succeed()) })

		node := newNode()
		addr, err := loopback.FreeAddr()
		Expect(err).NotTo(HaveOccurred())
		id := rest.ImpersonationConfig{UserName: "system:serviceaccount:" + agentNamespace + ":dockside-agent",
			Extra: map[string][]string{"authentication.kubernetes.io/node-name": {node}}}
		a := startAgentOn(as(id), node, newDocker(node), func(o *agent.Options) { o.MetricsBindAddress = addr })
		url := "https://" + addr + "/metrics"

		Eventually(func() (int, error) { return scrapeStatus(url, "") }).WithTimeout(time.Minute).Should(Equal(http.StatusUnauthorized))
		// A token the API server rejects is refused too, but controller-runtime's filter takes the rejection for
		// an error of the review and answers 500 "Authentication failed", not 401.
		Expect(scrapeStatus(url, "not-a-token")).To(Equal(http.StatusInternalServerError))
		Expect(scrapeStatus(url, stranger)).To(Equal(http.StatusForbidden))
		Expect(scrapeStatus(url, scraper)).To(Equal(http.StatusOK))

		// Some work, for the series that appear with it: a Sandbox made Ready, and one Docker call that failed.
		sbx := sandbox(ns, "scraped", node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		listErrors := map[string]string{"operation": "ListContainers", "phase": string(dd.PhaseObserve), "kind": string(dd.KindUnavailable)}
		errorsBefore := metricValue("dockside_docker_operation_errors_total", listErrors)
		a.docker.FailNext(fake.OpListContainers, dd.KindUnavailable)
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Labels = map[string]string{"touched": "yes"} })
		Eventually(func() float64 { return metricValue("dockside_docker_operation_errors_total", listErrors) }).Should(Equal(errorsBefore + 1))

		queried := dashboardMetrics(filepath.Join("..", "..", "..", "config", "grafana", "dashboard.json"))
		Expect(queried).To(ContainElements("dockside_sandbox_ready_seconds_bucket", "dockside_sandboxes",
			"dockside_docker_operation_duration_seconds_bucket", "dockside_topology_poisonings_total"))
		families := scrapeFamilies(url, scraper)
		for _, name := range queried {
			Expect(served(families, name)).To(BeTrue(), "the dashboard queries %s, which the agent does not serve", name)
		}
	})
})

// serviceAccountToken creates a ServiceAccount in ns and returns a token of it (TokenRequest), as the kubelet
// mounts one into a pod.
func serviceAccountToken(ns, name string) string {
	GinkgoHelper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	create(sa)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(k8s.SubResource("token").Create(ctx(), sa, req)).To(Succeed())
	Expect(req.Status.Token).NotTo(BeEmpty())
	return req.Status.Token
}

// scrape GETs url over HTTPS with token as bearer ("" for none). The agent's certificate is self-signed, made at
// its start, so it is not verified: what is tested is who gets an answer.
func scrape(url, token string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx(), http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return hc.Do(req)
}

func scrapeStatus(url, token string) (int, error) {
	resp, err := scrape(url, token)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// scrapeFamilies is one scrape that must succeed, parsed.
func scrapeFamilies(url, token string) map[string]*dto.MetricFamily {
	GinkgoHelper()
	resp, err := scrape(url, token)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return families
}

// served tells whether the scrape has at least one series of name: a counter or gauge of that name, or a
// histogram's _bucket, _sum or _count.
func served(families map[string]*dto.MetricFamily, name string) bool {
	if f, ok := families[name]; ok && f.GetType() != dto.MetricType_HISTOGRAM {
		return len(f.GetMetric()) > 0
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := families[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) && f.GetType() == dto.MetricType_HISTOGRAM {
			return len(f.GetMetric()) > 0
		}
	}
	return false
}

var (
	// A selector of the dashboard names its metric and filters on the node: metric{node=~"$node"}.
	promSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{[^}]*\}`)
	// What is left of an expression once selectors, ranges and grouping clauses are taken out is functions,
	// aggregations (each followed by "(") and numbers.
	promLeftover = regexp.MustCompile(`\[[^\]]*\]|\b(by|without)\s*\([^)]*\)`)
	promName     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	labelValues  = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),`)
)

// dashboardMetrics reads a Grafana dashboard and returns the metric names of every PromQL expression of its
// panels and of its template variables' label_values queries. An expression with a metric that is not
// written as metric{...} fails the spec, so that no metric goes unchecked.
func dashboardMetrics(path string) []string {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	Expect(json.Unmarshal(raw, &dash)).To(Succeed())
	names := map[string]bool{}
	for _, p := range dash.Panels {
		Expect(p.Targets).NotTo(BeEmpty(), "panel %q has no query", p.Title)
		for _, t := range p.Targets {
			selectors := promSelector.FindAllStringSubmatch(t.Expr, -1)
			Expect(selectors).NotTo(BeEmpty(), "panel %q: %s selects no metric", p.Title, t.Expr)
			for _, s := range selectors {
				names[s[1]] = true
			}
			rest := promLeftover.ReplaceAllString(promSelector.ReplaceAllString(t.Expr, ""), "")
			for _, word := range promName.FindAllString(rest, -1) {
				Expect(word).To(HaveSuffix("("), "panel %q: %s has a metric not written as metric{...}", p.Title, t.Expr)
			}
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		query, ok := v.Query.(map[string]any)
		Expect(ok).To(BeTrue(), "a query variable's query is an object")
		m := labelValues.FindStringSubmatch(query["query"].(string))
		Expect(m).NotTo(BeNil(), "variable query %v is not label_values(metric, label)", query["query"])
		names[m[1]] = true
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	return out
}
