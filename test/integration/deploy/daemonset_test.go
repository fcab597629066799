//go:build integration

package deploy_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// daemonSetSpecs check the agent DaemonSet that config/default applied: one privilege (the Docker socket),
// everything else locked down.
func daemonSetSpecs() {
	var pod corev1.PodSpec
	var agent corev1.Container

	BeforeAll(func(ctx context.Context) {
		var ds appsv1.DaemonSet
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: agentName}, &ds)).To(Succeed())
		pod = ds.Spec.Template.Spec
		Expect(pod.Containers).To(HaveLen(1))
		agent = pod.Containers[0]
	})

	It("runs as the dockside-agent ServiceAccount", func() {
		Expect(pod.ServiceAccountName).To(Equal(agentName))
	})

	It("takes its node name, and the namespace of its Lease, from the downward API", func() {
		Expect(agent.Args).To(ContainElements("--node-name=$(NODE_NAME)", "--lease-namespace=$(POD_NAMESPACE)"))
		Expect(fieldRef(agent, "NODE_NAME")).To(Equal("spec.nodeName"))
		Expect(fieldRef(agent, "POD_NAMESPACE")).To(Equal("metadata.namespace"))
	})

	It("mounts the Docker socket and the checkpoint folder, and no other host path", func() {
		hostPaths := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			if v.HostPath != nil {
				hostPaths[v.HostPath.Path] = v
			}
		}
		Expect(hostPaths).To(HaveLen(2))
		Expect(hostPaths).To(HaveKey(socketPath))
		Expect(hostPaths[socketPath].HostPath.Type).To(HaveValue(Equal(corev1.HostPathSocket)))
		Expect(hostPaths).To(HaveKey(checkpointPath))
		Expect(hostPaths[checkpointPath].HostPath.Type).To(HaveValue(Equal(corev1.HostPathDirectoryOrCreate)))
		for path, v := range hostPaths {
			Expect(agent.VolumeMounts).To(ContainElement(SatisfyAll(
				HaveField("Name", v.Name), HaveField("MountPath", path))))
		}
		Expect(agent.Args).To(ContainElement("--checkpoint-dir=" + checkpointPath))
	})

	It("shares nothing else with the host and holds no capability", func() {
		Expect(pod.HostNetwork).To(BeFalse())
		Expect(pod.HostPID).To(BeFalse())
		Expect(pod.HostIPC).To(BeFalse())
		sc := agent.SecurityContext
		Expect(sc).NotTo(BeNil())
		Expect(sc.Privileged).To(HaveValue(BeFalse()))
		Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(sc.Capabilities).NotTo(BeNil())
		Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		Expect(sc.Capabilities.Add).To(BeEmpty())
		Expect(pod.SecurityContext).NotTo(BeNil())
		Expect(pod.SecurityContext.SeccompProfile).NotTo(BeNil())
		Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	})

	It("probes the agent's health endpoint and sets requests and limits", func() {
		health := intstr.FromString("health")
		Expect(agent.Ports).To(ContainElement(SatisfyAll(HaveField("Name", "health"), HaveField("ContainerPort", int32(8081)))))
		Expect(agent.Ports).To(ContainElement(SatisfyAll(HaveField("Name", "metrics"), HaveField("ContainerPort", int32(8080)))))
		Expect(agent.Args).To(ContainElements("--health-probe-bind-address=:8081", "--metrics-bind-address=:8080"))
		Expect(agent.LivenessProbe).NotTo(BeNil())
		Expect(agent.LivenessProbe.HTTPGet).To(HaveValue(SatisfyAll(HaveField("Path", "/healthz"), HaveField("Port", health))))
		Expect(agent.ReadinessProbe).NotTo(BeNil())
		Expect(agent.ReadinessProbe.HTTPGet).To(HaveValue(SatisfyAll(HaveField("Path", "/readyz"), HaveField("Port", health))))
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			Expect(agent.Resources.Requests).To(HaveKey(r))
			Expect(agent.Resources.Limits).To(HaveKey(r))
		}
	})
}

// fieldRef is the downward API field that the container's environment variable name is taken from, or "".
func fieldRef(c corev1.Container, name string) string {
	for _, env := range c.Env {
		if env.Name == name && env.ValueFrom != nil && env.ValueFrom.FieldRef != nil {
			return env.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}
