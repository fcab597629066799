//go:build e2e

package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// probe is a run's command that reports, one line each, what the sandbox user can and cannot do: who it is,
// whether / takes a write, whether the workspace and HOME do, how much memory 4 MiB written to /tmp cost,
// and what became of a write of 32 MiB to /tmp, more than the run's whole memory limit.
const probe = `
echo "uid=$(id -u) gid=$(id -g)"
touch /written 2>/tmp/err && echo "root: written" || echo "root: $(cat /tmp/err)"
echo kept > /workspace/f && echo "workspace: writable"
echo kept > "$HOME/h" && echo "home: writable at $HOME"
f=/sys/fs/cgroup/memory.current; [ -e $f ] || f=/sys/fs/cgroup/memory/memory.usage_in_bytes
before=$(cat $f)
dd if=/dev/zero of=/tmp/four bs=1M count=4 2>/dev/null && echo "tmp: writable"
echo "tmp charged: $(( $(cat $f) - before ))"
rm /tmp/four
if out=$(dd if=/dev/zero of=/tmp/big bs=1M count=32 2>&1); then echo "tmp: took 32 MiB"; else echo "tmp: refused: $(echo "$out" | grep -m 1 error)"; fi
`

var _ = Describe("Containment on real Docker", func() {
	It("runs a busybox run as an unprivileged user on a read-only root, with a workspace, HOME and a /tmp counted as memory", func() {
		ns := newNamespace("contained")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: probe
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c"]
  args:
    - |`+indent(probe, "      ")+`
  resources: {memory: 32Mi}
  workspace: {size: 16Mi}
`)
		waitFor(ns, "sandbox/probe", "jsonpath={.status.phase}=Succeeded", 90*time.Second)
		out := field(ns, "sandbox/probe", "{.status.result.outputTail}")
		Expect(out).To(ContainSubstring("uid=65532 gid=65532"), "busybox has no USER: it runs as 65532, not root")
		Expect(out).To(MatchRegexp(`root: touch: /written: Read-only file system`))
		Expect(out).To(ContainSubstring("workspace: writable"))
		Expect(out).To(ContainSubstring("home: writable at /workspace"))
		Expect(out).To(ContainSubstring("tmp: writable"))
		charged := regexp.MustCompile(`tmp charged: (-?\d+)`).FindStringSubmatch(out)
		Expect(charged).NotTo(BeNil(), out)
		Expect(strconv.Atoi(charged[1])).To(BeNumerically(">=", 3<<20), "4 MiB in /tmp are charged to the memory limit")
		Expect(out).To(ContainSubstring("tmp: refused: dd: error writing '/tmp/big': No space left on device"),
			"/tmp holds a quarter of the 32Mi limit, so no write to it can reach the limit")
		deleteAndExpectGone(ns, "probe")
	})

	It("runs a SandboxService as an unprivileged user on a read-only root too", func() {
		ns := newNamespace("contained-svc")
		// The service serves what it found out about itself; the run fetches it.
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: SandboxService
metadata:
  name: self
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c", "id -u > /tmp/uid; touch /written 2>/tmp/root; exec httpd -f -p 8080 -h /tmp"]
  readiness:
    command: ["wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8080/uid"]
    periodSeconds: 1
    failureThreshold: 60
`)
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: ask
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c", "wget -q -O - http://self:8080/uid http://self:8080/root"]
  services: ["self"]
`)
		waitFor(ns, "sandbox/ask", "jsonpath={.status.phase}=Succeeded", 90*time.Second)
		out := field(ns, "sandbox/ask", "{.status.result.outputTail}")
		Expect(out).To(HavePrefix("65532\n"))
		Expect(out).To(ContainSubstring("touch: /written: Read-only file system"))
		deleteAndExpectGone(ns, "ask")
	})

	It("refuses runAsRoot on an agent without --allow-root, before building anything", func() {
		ns := newNamespace("root")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: root
spec:
  image: dockside.dev/busybox:local
  runAsRoot: true
`)
		waitFor(ns, "sandbox/root", "condition=Stalled", 60*time.Second)
		Expect(field(ns, "sandbox/root", `{.status.conditions[?(@.type=="Stalled")].reason}`)).To(Equal("RootNotAllowed"))
		Expect(field(ns, "sandbox/root", `{.status.conditions[?(@.type=="Stalled")].message}`)).To(ContainSubstring("--allow-root"))
		Expect(field(ns, "sandbox/root", "{.status.phase}")).To(Equal("Failed"))
		Expect(containers(ns, "root", "")).To(BeEmpty())
		deleteAndExpectGone(ns, "root")
	})

	It("gives a writable root only where the storage driver caps it, and otherwise says which driver cannot", func() {
		ns := newNamespace("writable")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: writable
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c", "echo kept > /written && cat /written && dd if=/dev/zero of=/big bs=1M count=32 2>&1; echo dd=$?"]
  rootFilesystem: {mode: Writable, size: 16Mi}
`)
		driver, err := docker("info", "-f", "{{.Driver}}")
		Expect(err).NotTo(HaveOccurred())
		backing, err := docker("info", "-f", `{{range .DriverStatus}}{{if eq (index . 0) "Backing Filesystem"}}{{index . 1}}{{end}}{{end}}`)
		Expect(err).NotTo(HaveOccurred())
		if driver == "btrfs" || driver == "zfs" || driver == "devicemapper" || (driver == "overlay2" && backing == "xfs") {
			waitFor(ns, "sandbox/writable", "jsonpath={.status.phase}=Succeeded", 90*time.Second)
			out := field(ns, "sandbox/writable", "{.status.result.outputTail}")
			Expect(out).To(HavePrefix("kept\n"))
			Expect(out).NotTo(ContainSubstring("dd=0"), "the writable layer is capped at 16Mi")
		} else {
			waitFor(ns, "sandbox/writable", "condition=Stalled", 60*time.Second)
			Expect(field(ns, "sandbox/writable", `{.status.conditions[?(@.type=="Stalled")].reason}`)).To(Equal("WritableRootUnsupported"))
			Expect(field(ns, "sandbox/writable", `{.status.conditions[?(@.type=="Stalled")].message}`)).
				To(ContainSubstring("storage driver " + driver))
			Expect(containers(ns, "writable", "")).To(BeEmpty())
		}
		deleteAndExpectGone(ns, "writable")
	})
})

// indent prefixes every line of s with prefix, for a block scalar in a manifest.
func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}
