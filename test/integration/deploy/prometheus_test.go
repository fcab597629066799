//go:build integration

package deploy_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// config/prometheus finds the agents only if its selectors and port names agree with the DaemonSet's: checked
// here on the files, since envtest has no Prometheus (the scrape itself is test/integration/controllers'
// metrics endpoint spec).
var _ = Describe("config/prometheus", func() {
	var ds appsv1.DaemonSet
	var metricsPort int32

	BeforeEach(func() {
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "agent", "daemonset.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(data, &ds)).To(Succeed())
		for _, p := range ds.Spec.Template.Spec.Containers[0].Ports {
			if p.Name == "metrics" {
				metricsPort = p.ContainerPort
			}
		}
		Expect(metricsPort).NotTo(BeZero(), "the DaemonSet names no metrics port")
	})

	It("renders a Service over the agent pods' metrics port and a ServiceMonitor of it that scrapes HTTPS with a token", func() {
		out, err := kubectl("kustomize", filepath.Join(repoRoot, "config", "prometheus"))
		Expect(err).NotTo(HaveOccurred())
		objs := map[string]*unstructured.Unstructured{}
		for _, obj := range splitManifests(out) {
			objs[obj.GetKind()] = obj
		}
		Expect(objs).To(HaveKey("Service"))
		Expect(objs).To(HaveKey("ServiceMonitor"))
		svc, monitor := objs["Service"], objs["ServiceMonitor"]

		selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
		Expect(labels.SelectorFromSet(selector).Matches(labels.Set(ds.Spec.Template.Labels))).To(BeTrue(), "the Service selects no agent pod")
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		Expect(ports).To(ConsistOf(SatisfyAll(HaveKeyWithValue("name", "https"), HaveKeyWithValue("targetPort", "metrics"))))

		monitorSelector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
		Expect(labels.SelectorFromSet(monitorSelector).Matches(labels.Set(svc.GetLabels()))).To(BeTrue(), "the ServiceMonitor selects no Service")
		endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
		Expect(endpoints).To(ConsistOf(SatisfyAll(HaveKeyWithValue("port", "https"), HaveKeyWithValue("scheme", "https"),
			HaveKeyWithValue("bearerTokenFile", "/var/run/secrets/kubernetes.io/serviceaccount/token"))))
	})

	It("has a scrape job that keeps the agent pods' metrics port and scrapes HTTPS with a token", func() {
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "scrape-config.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var cfg struct {
			ScrapeConfigs []struct {
				Scheme        string `json:"scheme"`
				Authorization struct {
					CredentialsFile string `json:"credentials_file"`
				} `json:"authorization"`
				RelabelConfigs []struct {
					SourceLabels []string `json:"source_labels"`
					Regex        string   `json:"regex"`
					Action       string   `json:"action"`
				} `json:"relabel_configs"`
			} `json:"scrape_configs"`
		}
		Expect(yaml.Unmarshal(data, &cfg)).To(Succeed())
		Expect(cfg.ScrapeConfigs).To(HaveLen(1))
		job := cfg.ScrapeConfigs[0]
		Expect(job.Scheme).To(Equal("https"))
		Expect(job.Authorization.CredentialsFile).To(Equal("/var/run/secrets/kubernetes.io/serviceaccount/token"))
		Expect(job.RelabelConfigs).To(ContainElement(SatisfyAll(
			HaveField("Action", "keep"),
			HaveField("SourceLabels", []string{"__meta_kubernetes_pod_label_app_kubernetes_io_name", "__meta_kubernetes_pod_container_port_name"}),
			HaveField("Regex", ds.Spec.Template.Labels["app.kubernetes.io/name"]+";metrics"))))
	})
})
