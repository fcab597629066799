//go:build integration

package api_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// manifest is a Dockside object of the given kind and name with spec written as one line of flow YAML.
func manifest(kind, name, spec string) string {
	return fmt.Sprintf("apiVersion: dockside.dev/v1alpha1\nkind: %s\nmetadata: {name: %q}\nspec: %s\n", kind, name, spec)
}

func sandbox(spec string) string    { return manifest("Sandbox", "bad", spec) }
func service(spec string) string    { return manifest("SandboxService", "bad", spec) }
func checkpoint(spec string) string { return manifest("Checkpoint", "bad", spec) }

// nineServices names one SandboxService more than a Sandbox may have.
var nineServices = "[s1, s2, s3, s4, s5, s6, s7, s8, s9]"

// bulkyList is a flow YAML list of n strings of size bytes each.
func bulkyList(n, size int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = strings.Repeat("x", size)
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// bulkyEnv is a flow YAML list of n variables (prefix0, prefix1, ...) with values of size bytes each.
func bulkyEnv(prefix string, n, size int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("{name: %s%d, value: %s}", prefix, i, strings.Repeat("x", size))
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// expectRefused creates manifest in a new namespace and expects the API server to refuse it with message,
// leaving the namespace empty.
func expectRefused(ctx context.Context, manifest, message string) {
	ns := newNamespace(ctx)
	err := k8s.Create(ctx, fromYAML(manifest, ns))
	Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(), "want a refusal, got %v", err)
	Expect(err.Error()).To(ContainSubstring(message))
	Expect(countObjects(ctx, ns)).To(BeZero())
}

var _ = Describe("validation", func() {
	DescribeTable("refuses a bad manifest with a message a person understands, leaving nothing behind",
		expectRefused,
		// Sandbox: image.
		Entry("no image", sandbox(`{command: ["true"]}`), "spec.image: Required value"),
		Entry("uppercase image name", sandbox(`{image: Busybox}`), "image must be a reference"),
		Entry("image with a space", sandbox(`{image: "busy box"}`), "image must be a reference"),
		Entry("short digest", sandbox(`{image: "busybox@sha256:abc"}`), "image must be a reference"),
		// Sandbox: network. Host networking and container:<id> cannot be expressed; finer rules are refused.
		Entry("network mode host", sandbox(`{image: busybox, network: {mode: host}}`), `Unsupported value: "host"`),
		Entry("network mode container:<id>", sandbox(`{image: busybox, network: {mode: "container:abc"}}`), `Unsupported value: "container:abc"`),
		Entry("hostNetwork field", sandbox(`{image: busybox, hostNetwork: true}`), `unknown field "spec.hostNetwork"`),
		Entry("an allowlist without mode Isolated", sandbox(`{image: busybox, network: {allow: ["pypi.org:443"]}}`), "network.allow applies to mode Isolated only"),
		Entry("an allowlist with mode Unrestricted", sandbox(`{image: busybox, network: {mode: Unrestricted, allow: ["pypi.org"]}}`), "network.allow applies to mode Isolated only"),
		Entry("an allowlist entry with a scheme", sandbox(`{image: busybox, network: {mode: Isolated, allow: ["https://pypi.org"]}}`), "network.allow entries are host, host:port, *.suffix or *.suffix:port"),
		Entry("an allowlist entry in capitals", sandbox(`{image: busybox, network: {mode: Isolated, allow: ["PyPI.org"]}}`), "network.allow entries are host, host:port, *.suffix or *.suffix:port"),
		Entry("an allowlist entry with a wildcard inside", sandbox(`{image: busybox, network: {mode: Isolated, allow: ["py*.org"]}}`), "network.allow entries are host, host:port, *.suffix or *.suffix:port"),
		Entry("an allowlist host with an all-digit last label", sandbox(`{image: busybox, network: {mode: Isolated, allow: ["mirror.123"]}}`), "must be an IPv4 address"),
		Entry("an allowlist address that is no IPv4 address", sandbox(`{image: busybox, network: {mode: Isolated, allow: ["999.1.1.1:80"]}}`), "must be an IPv4 address"),
		Entry("an allowlist port out of range", sandbox(`{image: busybox, network: {mode: Isolated, allow: ["pypi.org:70000"]}}`), "a port must be between 1 and 65535"),
		Entry("an allowlist port 0", sandbox(`{image: busybox, network: {mode: Isolated, allow: ["pypi.org:0"]}}`), "a port must be between 1 and 65535"),
		// Sandbox: resources and workspace, positive and bounded.
		Entry("zero cpu", sandbox(`{image: busybox, resources: {cpu: "0"}}`), "cpu must be between 10m and 64 cores"),
		Entry("too much cpu", sandbox(`{image: busybox, resources: {cpu: 128}}`), "cpu must be between 10m and 64 cores"),
		Entry("negative memory", sandbox(`{image: busybox, resources: {memory: -1Gi}}`), "memory must be between 8Mi and 64Gi"),
		Entry("tiny memory", sandbox(`{image: busybox, resources: {memory: 1Ki}}`), "memory must be between 8Mi and 64Gi"),
		Entry("memory that is not a quantity", sandbox(`{image: busybox, resources: {memory: lots}}`), "spec.resources.memory"),
		Entry("too few pids", sandbox(`{image: busybox, resources: {pids: 0}}`), "should be greater than or equal to 16"),
		Entry("huge workspace", sandbox(`{image: busybox, workspace: {size: 100Gi}}`), "workspace size must be between 1Mi and 8Gi"),
		Entry("relative mountPath", sandbox(`{image: busybox, workspace: {mountPath: workspace}}`), "must be a clean absolute path other than /"),
		Entry("mountPath /", sandbox(`{image: busybox, workspace: {mountPath: /}}`), "must be a clean absolute path other than /"),
		Entry("mountPath under /proc", sandbox(`{image: busybox, workspace: {mountPath: /proc/x}}`), "must not be under /proc, /sys or /dev"),
		Entry("mountPath with ..", sandbox(`{image: busybox, workspace: {mountPath: /a/../etc}}`), "must not contain '.' or '..' segments"),
		Entry("mountPath with a trailing /", sandbox(`{image: busybox, workspace: {mountPath: /src/}}`), "or a trailing '/'"),
		// Sandbox: the root file system, read-only unless Writable with a size.
		Entry("writable root without a size", sandbox(`{image: busybox, rootFilesystem: {mode: Writable}}`), "rootFilesystem.size is required with mode Writable"),
		Entry("a size on a read-only root", sandbox(`{image: busybox, rootFilesystem: {size: 1Gi}}`), "rootFilesystem.size applies only to mode Writable"),
		Entry("huge writable root", sandbox(`{image: busybox, rootFilesystem: {mode: Writable, size: 100Gi}}`), "rootFilesystem size must be between 1Mi and 64Gi"),
		Entry("root file system mode Overlay", sandbox(`{image: busybox, rootFilesystem: {mode: Overlay}}`), `Unsupported value: "Overlay"`),
		Entry("runAsRoot that is not a boolean", sandbox(`{image: busybox, runAsRoot: "yes"}`), "spec.runAsRoot"),
		// Sandbox: services.
		Entry("nine services", sandbox(`{image: busybox, services: `+nineServices+`}`), "must have at most 8 items"),
		// Sandbox: the program and its environment, bounded in all (docs/security.md, "What bounds the agent's
		// memory"), each item within its own limit.
		Entry("command and args over 128 KiB", sandbox(`{image: busybox, command: [sh, -c], args: `+bulkyList(9, 16000)+`}`), "command and args may hold at most 131072 bytes (128 KiB) together"),
		Entry("env over 128 KiB", sandbox(`{image: busybox, env: `+bulkyEnv("V", 5, 30000)+`}`), "env and commandEnv may hold at most 131072 bytes (128 KiB)"),
		Entry("env and commandEnv over 128 KiB together", sandbox(`{image: busybox, env: `+bulkyEnv("V", 3, 30000)+`, commandEnv: `+bulkyEnv("C", 2, 30000)+`}`), "env and commandEnv may hold at most 131072 bytes (128 KiB)"),
		Entry("the same service twice", sandbox(`{image: busybox, services: [redis, redis]}`), "must not name the same SandboxService twice"),
		Entry("service name that is not a DNS label", sandbox(`{image: busybox, services: [Redis_1]}`), "each service must be the name of a SandboxService"),
		// Sandbox: the rest of the spec.
		Entry("lifecycle Stopped", sandbox(`{image: busybox, lifecycle: Stopped}`), `Unsupported value: "Stopped"`),
		Entry("args without command", sandbox(`{image: busybox, args: [-c, ls]}`), "args needs a command"),
		Entry("ttl on a session", sandbox(`{image: busybox, ttlSecondsAfterFinished: 60}`), "ttlSecondsAfterFinished applies only to runs"),
		Entry("idle pause on a run", sandbox(`{image: busybox, command: [sh], idlePauseSeconds: 60}`), "idlePauseSeconds applies only to sessions"),
		Entry("lazy start of a run", sandbox(`{image: busybox, command: [sh], start: Lazy}`), "start: Lazy applies only to sessions"),
		Entry("start Later", sandbox(`{image: busybox, start: Later}`), `Unsupported value: "Later"`),
		Entry("idle pause too short", sandbox(`{image: busybox, idlePauseSeconds: 1}`), "idlePauseSeconds must be between 5 and 604800"),
		Entry("idle pause too long", sandbox(`{image: busybox, idlePauseSeconds: 604801}`), "idlePauseSeconds must be between 5 and 604800"),
		Entry("zero deadline", sandbox(`{image: busybox, activeDeadlineSeconds: 0}`), "should be greater than or equal to 1"),
		Entry("empty command", sandbox(`{image: busybox, command: []}`), "should have at least 1 items"),
		Entry("env name not an identifier", sandbox(`{image: busybox, env: [{name: 1X, value: a}]}`), "env name must be a C identifier"),
		Entry("env value and valueFrom", sandbox(`{image: busybox, env: [{name: A, value: a, valueFrom: {secretKeyRef: {name: s, key: k}}}]}`), "set either value or valueFrom, not both"),
		Entry("env twice", sandbox(`{image: busybox, env: [{name: A, value: a}, {name: A, value: b}]}`), "Duplicate value"),
		Entry("secret key with a slash", sandbox(`{image: busybox, env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: a/b}}}]}`), "secret key may hold only"),
		Entry("relative workingDir", sandbox(`{image: busybox, workingDir: src}`), "workingDir must be an absolute path"),
		Entry("restoreFrom not a DNS label", sandbox(`{image: busybox, restoreFrom: Snap_1}`), "restoreFrom must be the name of a Checkpoint"),
		Entry("nodeName not a DNS subdomain", sandbox(`{image: busybox, nodeName: Node_1}`), "nodeName must be a DNS subdomain"),
		Entry("Sandbox name with a dot", manifest("Sandbox", "a.b", `{image: busybox}`), "Sandbox name must be a DNS label"),
		Entry("Sandbox name of 64 characters", manifest("Sandbox", strings.Repeat("a", 64), `{image: busybox}`), "Sandbox name must be a DNS label"),
		// SandboxService.
		Entry("service without image", service(`{ports: [{port: 80}]}`), "spec.image: Required value"),
		Entry("service command and args over 128 KiB", service(`{image: redis, command: `+bulkyList(9, 16000)+`}`), "command and args may hold at most 131072 bytes (128 KiB) together"),
		Entry("service env over 128 KiB", service(`{image: redis, env: `+bulkyEnv("V", 5, 30000)+`}`), "env may hold at most 131072 bytes (128 KiB)"),
		Entry("readiness timeout beyond period", service(`{image: redis, readiness: {command: ["true"], periodSeconds: 1, timeoutSeconds: 5}}`), "readiness timeoutSeconds must not exceed periodSeconds"),
		Entry("readiness without command", service(`{image: redis, readiness: {periodSeconds: 1}}`), "spec.readiness.command: Required value"),
		Entry("port out of range", service(`{image: redis, ports: [{port: 70000}]}`), "should be less than or equal to 65535"),
		Entry("port protocol SCTP", service(`{image: redis, ports: [{port: 80, protocol: SCTP}]}`), `Unsupported value: "SCTP"`),
		Entry("alias that is not a DNS label", service(`{image: redis, aliases: [Cache_1]}`), "each alias must be a DNS label"),
		Entry("alias repeating the service's own name", manifest("SandboxService", "cache", `{image: redis, aliases: [redis, cache]}`), "aliases must not repeat the SandboxService's own name"),
		Entry("the same alias twice", service(`{image: redis, aliases: [db, db]}`), "Duplicate value"),
		Entry("service resources unbounded", service(`{image: redis, resources: {memory: 1Ti}}`), "memory must be between 8Mi and 64Gi"),
		Entry("SandboxService name with a dot", manifest("SandboxService", "redis.cache", `{image: redis}`), "SandboxService name must be a DNS label"),
		// Checkpoint.
		Entry("checkpoint without sandbox", checkpoint(`{paths: [src]}`), "spec.sandboxName: Required value"),
		Entry("checkpoint of an absolute path", checkpoint(`{sandboxName: shell, paths: [/etc]}`), "paths must be relative to the workspace"),
		Entry("checkpoint of a path with ..", checkpoint(`{sandboxName: shell, paths: [src/../..]}`), "must not contain '..'"),
		Entry("checkpoint sandboxName not a DNS label", checkpoint(`{sandboxName: Shell}`), "sandboxName must be the name of a Sandbox"),
		Entry("Checkpoint name with a dot", manifest("Checkpoint", "shell.1", `{sandboxName: shell}`), "Checkpoint name must be a DNS label"),
		// Mount paths of every kind: only the clean form is admitted, so no spelling smuggles in a path that
		// cleans to a forbidden one.
		smuggledMountPaths(),
	)

	It("admits every form of allowlist entry on an Isolated Sandbox", func(ctx context.Context) {
		ns := newNamespace(ctx)
		u := fromYAML(manifest("Sandbox", "allow", `{image: busybox, network: {mode: Isolated, allow: `+
			`["pypi.org", "files.pythonhosted.org:443", "*.githubusercontent.com", "*.example.com:8443", "203.0.113.7:80", "localhost."]}}`), ns)
		Expect(k8s.Create(ctx, u)).To(HaveOccurred(), "a trailing dot is not part of the accepted form")
		u = fromYAML(manifest("Sandbox", "allow", `{image: busybox, network: {mode: Isolated, allow: `+
			`["pypi.org", "files.pythonhosted.org:443", "*.githubusercontent.com", "*.example.com:8443", "203.0.113.7:80"]}}`), ns)
		Expect(k8s.Create(ctx, u)).To(Succeed())
	})

	It("admits clean mount paths beside the kernel's file systems, on every kind", func(ctx context.Context) {
		ns := newNamespace(ctx)
		for i, p := range []string{"/devices", "/proc2/x", "/home/dev", "/srv/sys/data", "/a/.b/..c/..."} {
			for j, m := range mountPathManifests(p) {
				u := fromYAML(m.manifest, ns)
				u.SetName(fmt.Sprintf("ok-%d-%d", i, j))
				Expect(k8s.Create(ctx, u)).To(Succeed(), "%s at %s", m.field, p)
			}
		}
	})
})

// mountPathManifest is a manifest whose one mount path (named by field) is p.
type mountPathManifest struct{ field, manifest string }

// mountPathManifests are the manifests with a mount path p: a Sandbox's workspace and scratch, and a
// SandboxService's scratch (the only mount paths the API has).
func mountPathManifests(p string) []mountPathManifest {
	return []mountPathManifest{
		{"Sandbox workspace", sandbox(fmt.Sprintf(`{image: busybox, workspace: {mountPath: %q}}`, p))},
		{"Sandbox scratch", sandbox(fmt.Sprintf(`{image: busybox, scratch: [{mountPath: %q, size: 8Mi}]}`, p))},
		{"SandboxService scratch", service(fmt.Sprintf(`{image: redis, scratch: [{mountPath: %q, size: 8Mi}]}`, p))},
	}
}

// smuggledMountPaths are rows of spellings that clean to /proc, /sys or /dev (or into them), for every mount
// path of every kind.
func smuggledMountPaths() []TableEntry {
	var rows []TableEntry
	for _, p := range []string{"/./dev", "/./proc", "//proc", "/dev/", "/a/../proc", "/sys/.", "/proc//1", "/x/./../dev/shm"} {
		for _, m := range mountPathManifests(p) {
			rows = append(rows, Entry(fmt.Sprintf("%s mountPath %s", m.field, p), m.manifest, "mountPath must be a clean absolute path"))
		}
	}
	return rows
}
