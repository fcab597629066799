//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// fillScript writes a workspace that is hard to copy faithfully: a 50 MiB file, names with spaces and
// non-ASCII letters, modes that differ from the umask's, a symbolic link and an empty folder.
const fillScript = `set -e
cd /workspace
dd if=/dev/urandom of="big file.bin" bs=1048576 count=50 2>/dev/null
mkdir -p "données/été" "empty dir" "private"
echo "salut" > "données/été/résumé.txt"
echo "日本語" > "日本語 ファイル.txt"
printf 'secret' > private/key && chmod 0600 private/key && chmod 0700 private
printf '#!/bin/sh\necho hi\n' > run.sh && chmod 0755 run.sh
printf 'group' > shared.txt && chmod 0640 shared.txt
ln -s "big file.bin" "link to big"
`

// listScript describes every entry of the workspace (name, link target, mode, owner, size, type) and the
// content of every file, sorted, so that two workspaces compare as text.
const listScript = `cd /workspace && find . -exec stat -c "%N %a %u:%g %s %F" {} + | sort && find . -type f -exec md5sum {} + | sort`

func snapshotManifest(sandbox string) string {
	return `
apiVersion: dockside.dev/v1alpha1
kind: Checkpoint
metadata:
  name: snap
spec:
  sandboxName: ` + sandbox + `
`
}

// inPrimary runs a shell script in the Sandbox's primary container.
func inPrimary(ns, name, script string) string {
	GinkgoHelper()
	out, err := docker("exec", onlyContainer(ns, name, "primary"), "sh", "-c", script)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// deleteCheckpoint deletes a Checkpoint with kubectl, which waits for the agent to release its archive.
func deleteCheckpoint(ns, name string) {
	GinkgoHelper()
	_, err := kubectl("delete", "-n", ns, "checkpoint", name, "--timeout=60s")
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Checkpoint and restore on real Docker", func() {
	It("restores every byte, name and mode of a captured workspace into a new Sandbox", func() {
		ns := newNamespace("ckpt")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: source
spec:
  image: dockside.dev/busybox:local
`)
		waitFor(ns, "sandbox/source", "condition=Ready", 60*time.Second)
		inPrimary(ns, "source", fillScript)
		before := inPrimary(ns, "source", listScript)
		Expect(before).To(ContainSubstring("'./link to big' -> 'big file.bin'"))
		Expect(before).To(ContainSubstring("./empty dir"))
		Expect(before).To(ContainSubstring("52428800 regular file"))

		apply(ns, snapshotManifest("source"))
		waitFor(ns, "checkpoint/snap", "condition=Ready", 60*time.Second)
		Expect(field(ns, "sandbox/source", "{.status.phase}")).To(Equal("Running"), "thawed after the copy")
		Expect(docker("inspect", "-f", "{{.State.Paused}}", onlyContainer(ns, "source", "primary"))).To(Equal("false"))
		digest := field(ns, "checkpoint/snap", "{.status.digest}")
		archive := filepath.Join(agent.checkpoints, "sha256", strings.TrimPrefix(digest, "sha256:"))
		info, err := os.Stat(archive)
		Expect(err).NotTo(HaveOccurred())
		Expect(field(ns, "checkpoint/snap", "{.status.sizeBytes}")).To(Equal(strconv.FormatInt(info.Size(), 10)))
		Expect(info.Size()).To(BeNumerically(">", 50<<20))
		Expect(field(ns, "checkpoint/snap", "{.status.nodeName}")).To(Equal(node))
		row, err := kubectl("get", "-n", ns, "ckpt", "snap", "--no-headers")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(row)[:6]).To(Equal([]string{"snap", "Ready", "source", node, "50Mi", "Succeeded"}), "kubectl get ckpt shows where and how big")
		row, err = kubectl("get", "-n", ns, "sbx", "source", "-o", "wide", "--no-headers")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(row)[:4]).To(Equal([]string{"source", "Running", "True", node}), "kubectl get sbx -o wide shows its node")
		captured := field(ns, "checkpoint/snap", "{.status.captureDuration}")
		frozen := field(ns, "checkpoint/snap", "{.status.frozenDuration}")

		deleteAndExpectGone(ns, "source")
		start := time.Now()
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: restored
spec:
  image: dockside.dev/busybox:local
  restoreFrom: snap
`)
		waitFor(ns, "sandbox/restored", "condition=Ready", 60*time.Second)
		ready := time.Since(start).Round(time.Millisecond)
		restored := field(ns, "sandbox/restored", `{.status.conditions[?(@.type=="Restored")].message}`)
		AddReportEntry("checkpoint of a 50 MiB workspace", "capture "+captured+" (frozen "+frozen+"); "+restored+"; restored Sandbox Ready in "+ready.String())
		Expect(inPrimary(ns, "restored", listScript)).To(Equal(before))

		deleteAndExpectGone(ns, "restored")
		deleteCheckpoint(ns, "snap")
		_, err = os.Stat(archive)
		Expect(os.IsNotExist(err)).To(BeTrue(), "the archive goes with its Checkpoint")
	})

	It("captures a paused Sandbox and leaves it paused", func() {
		ns := newNamespace("ckpt-paused")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: frozen
spec:
  image: dockside.dev/busybox:local
`)
		waitFor(ns, "sandbox/frozen", "condition=Ready", 60*time.Second)
		inPrimary(ns, "frozen", "echo kept > /workspace/note.txt")
		_, err := kubectl("patch", "-n", ns, "sandbox/frozen", "--type=merge", "-p", `{"spec":{"lifecycle":"Paused"}}`)
		Expect(err).NotTo(HaveOccurred())
		waitFor(ns, "sandbox/frozen", "condition=Paused", time.Minute)

		apply(ns, snapshotManifest("frozen"))
		waitFor(ns, "checkpoint/snap", "condition=Ready", 60*time.Second)
		Expect(field(ns, "checkpoint/snap", "{.status.frozenDuration}")).To(Equal("0s"), "it was frozen already")
		Consistently(func() string {
			out, _ := docker("inspect", "-f", "{{.State.Paused}}", onlyContainer(ns, "frozen", "primary"))
			return out
		}, 2*time.Second, 200*time.Millisecond).Should(Equal("true"))
		Expect(field(ns, "sandbox/frozen", "{.status.phase}")).To(Equal("Paused"))

		deleteAndExpectGone(ns, "frozen")
		deleteCheckpoint(ns, "snap")
	})
})
