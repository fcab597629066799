//go:build integration

package deploy_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// daemonSetSpecs check the agent DaemonSet that config/default applied: the Docker socket, and for egress control
// (docs/egress.md) the host's network and CAP_NET_ADMIN, for the data plane's signals the host's PIDs and CAP_KILL;
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

	It("mounts the Docker socket, the checkpoint folder, Docker's volumes and the node's peer certificate, and no other host path", func() {
		hostPaths := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			if v.HostPath != nil {
				hostPaths[v.HostPath.Path] = v
			}
		}
		Expect(hostPaths).To(HaveLen(4))
		Expect(hostPaths).To(HaveKey(peerPath))
		Expect(agent.VolumeMounts).To(ContainElement(SatisfyAll(HaveField("MountPath", peerPath), HaveField("ReadOnly", true))))
		Expect(hostPaths).To(HaveKey(volumesPath))
		Expect(agent.VolumeMounts).To(ContainElement(SatisfyAll(HaveField("MountPath", volumesPath),
			HaveField("MountPropagation", HaveValue(Equal(corev1.MountPropagationHostToContainer))))),
			"the workspaces' tmpfs mounts come after the pod starts")
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

	// The egress proxy listens on the Isolated bridges' gateways and the firewall table goes into the host's
	// network namespace: both need the host's network. The proxy resolves names for sandboxes, through the
	// cluster's DNS as any pod would.
	It("shares the host's network, and resolves names through the cluster's DNS", func() {
		Expect(pod.HostNetwork).To(BeTrue())
		Expect(pod.DNSPolicy).To(Equal(corev1.DNSClusterFirstWithHostNet))
	})

	// The data plane signals Sandbox processes from the host, by the host PIDs the daemon reports
	// (docs/design/decisions/0025-signals-from-the-host.md).
	It("shares the host's PIDs, and nothing else with the host", func() {
		Expect(pod.HostPID).To(BeTrue())
		Expect(pod.HostIPC).To(BeFalse())
		sc := agent.SecurityContext
		Expect(sc).NotTo(BeNil())
		Expect(sc.Privileged).To(HaveValue(BeFalse()))
		Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(pod.SecurityContext).NotTo(BeNil())
		Expect(pod.SecurityContext.SeccompProfile).NotTo(BeNil())
		Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	})

	// The host firewall table is installed over netlink, which needs CAP_NET_ADMIN; files in workspaces are
	// served on their volumes' host side as the sandbox's user, which needs CAP_CHOWN, CAP_DAC_OVERRIDE and
	// CAP_FOWNER (hostvolume.Access); signals to Sandbox processes of other users need CAP_KILL. Added
	// capabilities reach only a root process (Kubernetes sets no ambient ones), so the agent must stay uid 0.
	It("holds CAP_NET_ADMIN, the capabilities of files on volumes and CAP_KILL, and no other, as root", func() {
		sc := agent.SecurityContext
		Expect(sc).NotTo(BeNil())
		Expect(sc.Capabilities).NotTo(BeNil())
		Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		Expect(sc.Capabilities.Add).To(ConsistOf(corev1.Capability("NET_ADMIN"), corev1.Capability("CHOWN"),
			corev1.Capability("DAC_OVERRIDE"), corev1.Capability("FOWNER"), corev1.Capability("KILL")))
		Expect(sc.RunAsUser).To(BeNil(), "the pod's securityContext sets the user")
		Expect(pod.SecurityContext.RunAsUser).To(HaveValue(BeZero()))
	})

	It("serves the egress proxy on port 3128, with the host firewall on", func() {
		Expect(agent.Args).To(ContainElement("--egress-proxy-port=3128"))
		Expect(agent.Args).NotTo(ContainElement(HavePrefix("--host-firewall")), "the firewall is on by default")
	})

	It("serves the data plane on port 9443 with the Secret's certificate, and tells other agents its node's address", func() {
		Expect(agent.Args).To(ContainElements("--dataplane-bind-address=:9443", "--dataplane-cert-dir=/var/run/dockside/dataplane",
			"--dataplane-peer-cert-dir="+peerPath, "--dataplane-advertise-address=$(HOST_IP):9443"))
		Expect(agent.Env).To(ContainElement(HaveField("ValueFrom.FieldRef.FieldPath", "status.hostIP")))
		Expect(agent.Ports).To(ContainElement(And(HaveField("Name", "dataplane"), HaveField("ContainerPort", int32(9443)))))
		Expect(agent.VolumeMounts).To(ContainElement(And(HaveField("MountPath", "/var/run/dockside/dataplane"), HaveField("ReadOnly", true))))
		Expect(pod.Volumes).To(ContainElement(HaveField("Secret.SecretName", "dockside-dataplane-tls")))
	})

	// With the host's network the agent binds its ports on the node, and the kubelet probes the pod IP, which is
	// the node's IP: the bind addresses name no host, so they cover it, and the probes name no host either.
	It("probes the agent's health endpoint on the node's address and sets requests and limits", func() {
		health := intstr.FromString("health")
		Expect(agent.Ports).To(ContainElement(SatisfyAll(HaveField("Name", "health"), HaveField("ContainerPort", int32(8081)))))
		Expect(agent.Ports).To(ContainElement(SatisfyAll(HaveField("Name", "metrics"), HaveField("ContainerPort", int32(8443)))))
		Expect(agent.Args).To(ContainElements("--health-probe-bind-address=:8081", "--metrics-bind-address=:8443"))
		// On every address of the node, metrics are HTTPS behind the API server's checks (the default), never plain.
		Expect(agent.Args).NotTo(ContainElement(HavePrefix("--metrics-secure")))
		Expect(agent.LivenessProbe).NotTo(BeNil())
		Expect(agent.LivenessProbe.HTTPGet).To(HaveValue(SatisfyAll(
			HaveField("Path", "/healthz"), HaveField("Port", health), HaveField("Host", BeEmpty()))))
		Expect(agent.ReadinessProbe).NotTo(BeNil())
		Expect(agent.ReadinessProbe.HTTPGet).To(HaveValue(SatisfyAll(
			HaveField("Path", "/readyz"), HaveField("Port", health), HaveField("Host", BeEmpty()))))
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			Expect(agent.Resources.Requests).To(HaveKey(r))
			Expect(agent.Resources.Limits).To(HaveKey(r))
		}
	})

	// Pod Security's baseline level forbids the host's network, added capabilities and hostPath volumes: the
	// agent's pod is admitted only because config/default makes dockside-system privileged. The pods are
	// created as a dry run, so nothing is left to run (envtest has no kubelet anyway).
	It("is admitted by Pod Security in dockside-system only, and gets its ports on the node", func(ctx context.Context) {
		agentPod := func(ns string) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: agentName + "-"}, Spec: *pod.DeepCopy()}
		}
		admitted := agentPod(namespace)
		Expect(k8s.Create(ctx, admitted, client.DryRunAll)).To(Succeed())
		// The API server gives a host-network pod's ports hostPorts, so the scheduler keeps other pods that
		// want them off the node.
		Expect(admitted.Spec.Containers[0].Ports).To(HaveEach(SatisfyAll(
			HaveField("HostPort", Not(BeZero())), WithTransform(func(p corev1.ContainerPort) bool { return p.HostPort == p.ContainerPort }, BeTrue()))))

		baseline := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: "pod-security-baseline", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
		Expect(k8s.Create(ctx, baseline)).To(Succeed())
		DeferCleanup(k8s.Delete, baseline)
		// The ServiceAccount admission plugin refuses a pod whose ServiceAccount is missing, before Pod Security.
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: baseline.Name, Name: agentName}})).To(Succeed())
		err := k8s.Create(ctx, agentPod(baseline.Name), client.DryRunAll)
		Expect(err).To(MatchError(SatisfyAll(ContainSubstring("PodSecurity"), ContainSubstring("hostNetwork"), ContainSubstring("NET_ADMIN"))))
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
