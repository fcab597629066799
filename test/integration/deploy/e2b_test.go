//go:build integration

package deploy_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

const e2bName = "dockside-e2b"

// config/e2b: the gateway acts only with its callers' keys (docs/e2b.md), so its own ServiceAccount must be
// able to do nothing with Sandboxes, and its pod must carry no token; it serves HTTPS with a certificate the
// operator's issuer makes (docs/e2b.md, "TLS").
var _ = Describe("config/e2b", Ordered, func() {
	e2bDir := filepath.Join(repoRoot, "config", "e2b")
	var deploy appsv1.Deployment
	var kubeconfigMap corev1.ConfigMap
	var service corev1.Service

	BeforeAll(func() {
		out, err := kubectl("kustomize", e2bDir)
		Expect(err).NotTo(HaveOccurred())
		rendered := map[string]bool{}
		for _, obj := range splitManifests(out) {
			rendered[obj.GetKind()+" "+obj.GetName()] = true
			Expect(obj.GetNamespace()).To(Equal(namespace), "%s %s", obj.GetKind(), obj.GetName())
			switch obj.GetKind() {
			case "Deployment":
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &deploy)).To(Succeed())
			case "ConfigMap":
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &kubeconfigMap)).To(Succeed())
			case "Service":
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &service)).To(Succeed())
			default:
			}
			Expect(obj.GetKind()).NotTo(BeElementOf("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"),
				"the gateway needs no RBAC of its own")
		}
		Expect(rendered).To(SatisfyAll(HaveKey("Deployment "+e2bName), HaveKey("Service "+e2bName),
			HaveKey("ServiceAccount "+e2bName), HaveKey("ConfigMap dockside-e2b-kubeconfig")))
	})

	It("is accepted by the API server with kubectl apply --server-side -k, after config/default", func() {
		// config/default first (as its own spec applies it: the same objects), so that the CRDs and the
		// aggregated user roles exist when the gateway's permissions are checked. It stays, as the suite's
		// control plane is thrown away after it (a namespace is never finalized without kube-controller-manager).
		_, err := kubectl("apply", "--server-side", "-k", filepath.Join(repoRoot, "config", "default"))
		Expect(err).NotTo(HaveOccurred())
		_, err = kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd/sandboxes.dockside.dev")
		Expect(err).NotTo(HaveOccurred())
		_, err = kubectl("apply", "--server-side", "-k", e2bDir)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			_, err := kubectl("delete", "--ignore-not-found", "-k", e2bDir)
			Expect(err).NotTo(HaveOccurred())
		})
		_, err = kubectl("get", "deployment/"+e2bName, "service/"+e2bName, "serviceaccount/"+e2bName, "-n", namespace)
		Expect(err).NotTo(HaveOccurred())
	})

	It("grants the gateway's ServiceAccount nothing on Sandboxes, their subresources or the rest of Dockside", func() {
		as := "--as=system:serviceaccount:" + namespace + ":" + e2bName
		for _, args := range [][]string{
			{"get", "sandboxes.dockside.dev", "--all-namespaces"},
			{"list", "sandboxes.dockside.dev", "--all-namespaces"},
			{"create", "sandboxes.dockside.dev", "-n", userNamespace},
			{"patch", "sandboxes.dockside.dev", "-n", userNamespace},
			{"delete", "sandboxes.dockside.dev", "-n", userNamespace},
			{"create", "sandboxclaims.dockside.dev", "-n", userNamespace},
			{"get", "sandboxtemplates.dockside.dev", "-n", userNamespace},
			{"create", "sandboxes.subresources.dockside.dev", "--subresource=exec", "-n", userNamespace},
			{"get", "sandboxes.subresources.dockside.dev", "--subresource=files", "-n", userNamespace},
			{"create", "sandboxes.subresources.dockside.dev", "--subresource=processes", "-n", userNamespace},
			{"get", "secrets", "-n", namespace},
			{"create", "serviceaccounts/token", "-n", userNamespace},
		} {
			out, err := kubectl(append([]string{"auth", "can-i", as}, args...)...)
			Expect(strings.TrimSpace(out)).To(Equal("no"), "kubectl auth can-i %v: %v", args, err)
		}
		// Everything it may do, as the API server lists it: nothing of Dockside's groups.
		out, err := kubectl("auth", "can-i", as, "--list", "-n", userNamespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).NotTo(ContainSubstring("dockside.dev"))
	})

	It("runs the gateway with no token, a kubeconfig of the API server's address and CA only, non-root", func() {
		pod := deploy.Spec.Template.Spec
		Expect(pod.ServiceAccountName).To(Equal(e2bName))
		Expect(pod.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		Expect(pod.Containers).To(HaveLen(1))
		c := pod.Containers[0]
		Expect(c.Image).To(Equal("dockside.dev/e2b:local"))
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))

		Expect(kubeconfigMap.Data).To(HaveKey("kubeconfig"))
		kc, err := clientcmd.Load([]byte(kubeconfigMap.Data["kubeconfig"]))
		Expect(err).NotTo(HaveOccurred())
		Expect(kc.AuthInfos).To(BeEmpty(), "the kubeconfig carries no credential")
		cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
		Expect(cluster.Server).To(Equal("https://kubernetes.default.svc"))

		// The flags name files the pod mounts: the kubeconfig from its ConfigMap, the CA from kube-root-ca.crt.
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			for _, v := range pod.Volumes {
				if v.Name == m.Name && v.ConfigMap != nil {
					mounts[v.ConfigMap.Name] = m.MountPath
				}
			}
		}
		Expect(c.Args).To(ContainElement("--kubeconfig=" + mounts[kubeconfigMap.Name] + "/kubeconfig"))
		Expect(filepath.Dir(cluster.CertificateAuthority)).To(Equal(mounts["kube-root-ca.crt"]))
	})

	It("serves HTTPS with the Secret dockside-e2b-tls, which certificate.yaml makes for the gateway's domain", func() {
		pod := deploy.Spec.Template.Spec
		c := pod.Containers[0]
		secretMount := ""
		for _, m := range c.VolumeMounts {
			for _, v := range pod.Volumes {
				if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == "dockside-e2b-tls" {
					secretMount = m.MountPath
				}
			}
		}
		Expect(secretMount).NotTo(BeEmpty(), "the TLS Secret is mounted")
		Expect(c.Args).To(ContainElements("--tls-cert-file="+secretMount+"/tls.crt", "--tls-key-file="+secretMount+"/tls.key",
			"--listen=0.0.0.0:8443"))
		var domain string
		for _, a := range c.Args {
			if d, ok := strings.CutPrefix(a, "--domain="); ok {
				domain = d
			}
		}
		Expect(domain).NotTo(BeEmpty(), "E2B_DOMAIN's hosts are served")
		Expect(c.Ports).To(ConsistOf(HaveField("ContainerPort", int32(8443))))
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			Expect(p.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))
		}
		Expect(service.Spec.Ports).To(ConsistOf(SatisfyAll(HaveField("Port", int32(443)), HaveField("TargetPort.StrVal", "https"))),
			"the SDKs dial port 443 of E2B_DOMAIN's hosts")

		raw, err := os.ReadFile(filepath.Join(e2bDir, "certificate.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var cert struct {
			Kind string
			Spec struct {
				SecretName string   `json:"secretName"`
				DNSNames   []string `json:"dnsNames"`
			}
		}
		Expect(yaml.Unmarshal(raw, &cert)).To(Succeed())
		Expect(cert.Kind).To(Equal("Certificate"))
		Expect(cert.Spec.SecretName).To(Equal("dockside-e2b-tls"))
		Expect(cert.Spec.DNSNames).To(ContainElements("*."+domain, domain), "every sandbox host, and the domain itself")
	})
})
