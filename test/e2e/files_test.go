//go:build e2e

package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// sessionWithWorkspace applies a session Sandbox of the test image with a workspace of size and waits until
// it is Ready.
func sessionWithWorkspace(ns, name, size string) {
	GinkgoHelper()
	apply(ns, fmt.Sprintf("apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: %s\nspec:\n  image: %s\n  workspace:\n    size: %s\n", name, busybox, size))
	waitFor(ns, "sandbox/"+name, "condition=Ready", 90*time.Second)
}

// randomLocal writes size random bytes to a new file of dir and returns its path and sha256.
func randomLocal(dir, name string, size int64) (string, string) {
	GinkgoHelper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	Expect(err).NotTo(HaveOccurred())
	h := sha256.New()
	_, err = io.CopyN(io.MultiWriter(f, h), rand.Reader, size)
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Close()).To(Succeed())
	return p, fmt.Sprintf("%x", h.Sum(nil))
}

func sha256Of(p string) string {
	GinkgoHelper()
	f, err := os.Open(p)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	Expect(err).NotTo(HaveOccurred())
	return fmt.Sprintf("%x", h.Sum(nil))
}

var _ = Describe("Files through the API server", func() {
	It("cp copies 100 MiB in and out with the same sha256, and a directory both ways", func() {
		ns := newNamespace("files-cp")
		sessionWithWorkspace(ns, "box", "160Mi")
		dir := GinkgoT().TempDir()
		local, sum := randomLocal(dir, "big.bin", 100<<20)
		Expect(os.Chmod(local, 0o600)).To(Succeed())

		out := dockside("cp", "", "-n", ns, local, "box:/workspace/")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(inPrimary(ns, "box", "sha256sum /workspace/big.bin")).To(HavePrefix(sum))
		Expect(inPrimary(ns, "box", "stat -c '%u %a' /workspace/big.bin")).To(Equal("65532 600"), "the container's user's, with the local file's bits")
		back := filepath.Join(dir, "back.bin")
		out = dockside("cp", "", "-n", ns, "box:/workspace/big.bin", back)
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(sha256Of(back)).To(Equal(sum))
		inPrimary(ns, "box", "rm /workspace/big.bin")

		src := filepath.Join(dir, "src")
		for name, content := range map[string]string{"main.go": "package main\n", "pkg/lib.go": "package pkg\n", "pkg/deep/empty": ""} {
			Expect(os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(src, name), []byte(content), 0o644)).To(Succeed())
		}
		Expect(os.Symlink("pkg/lib.go", filepath.Join(src, "link"))).To(Succeed())
		out = dockside("cp", "", "-n", ns, src, "box:/workspace")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(inPrimary(ns, "box", "cd /workspace/src && find . | sort && cat link")).
			To(Equal(".\n./link\n./main.go\n./pkg\n./pkg/deep\n./pkg/deep/empty\n./pkg/lib.go\npackage pkg"))
		out = dockside("ls", "", "-n", ns, "box", "src")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).To(MatchRegexp(`(?m)^lrwxrwxrwx +\d+ .* link -> pkg/lib.go$`))
		Expect(out.stdout).To(MatchRegexp(`(?m)^-rw-r--r-- +13 .* main.go$`))
		Expect(out.stdout).To(MatchRegexp(`(?m)^drwxr-xr-x +\d+ .* pkg$`))

		copied := filepath.Join(dir, "copied")
		out = dockside("cp", "", "-n", ns, "box:/workspace/src", copied)
		Expect(out.code).To(Equal(0), out.stderr)
		for name, content := range map[string]string{"main.go": "package main\n", "pkg/lib.go": "package pkg\n", "pkg/deep/empty": "", "link": "package pkg\n"} {
			Expect(os.ReadFile(filepath.Join(copied, name))).To(BeEquivalentTo(content), name)
		}
		Expect(os.Readlink(filepath.Join(copied, "link"))).To(Equal("pkg/lib.go"))
		deleteAndExpectGone(ns, "box")
	})

	It("refuses a full workspace (exit 3) and the read-only root with their messages, and leaves nothing", func() {
		ns := newNamespace("files-refuse")
		sessionWithWorkspace(ns, "small", "8Mi")
		dir := GinkgoT().TempDir()
		six, _ := randomLocal(dir, "six.bin", 6<<20)
		ten, _ := randomLocal(dir, "ten.bin", 10<<20)

		out := dockside("cp", "", "-n", ns, ten, "small:/workspace/ten.bin")
		Expect(out.code).To(Equal(3), out.stderr)
		Expect(out.stderr).To(ContainSubstring("small:/workspace/ten.bin: /workspace/ten.bin (10MiB) is larger than the workspace: 8MiB"))
		Expect(dockside("cp", "", "-n", ns, six, "small:/workspace/first.bin").code).To(Equal(0))
		out = dockside("cp", "", "-n", ns, six, "small:/workspace/second.bin")
		Expect(out.code).To(Equal(3), out.stderr)
		Expect(out.stderr).To(ContainSubstring("the workspace is full: 8MiB"))
		Expect(strings.Fields(inPrimary(ns, "small", "ls -A /workspace"))).To(Equal([]string{"first.bin"}), "nothing half-written is left")

		out = dockside("cp", "", "-n", ns, six, "small:/etc/six.bin")
		Expect(out.code).To(Equal(1), out.stderr)
		Expect(out.stderr).To(ContainSubstring("/etc/six.bin is on the read-only root file system; write under /workspace or /tmp"))
		out = dockside("cp", "", "-n", ns, "small:/workspace/absent", filepath.Join(dir, "absent"))
		Expect(out.code).To(Equal(1), out.stderr)
		Expect(out.stderr).To(ContainSubstring("/workspace/absent does not exist"))
		_, err := os.Stat(filepath.Join(dir, "absent"))
		Expect(os.IsNotExist(err)).To(BeTrue())
		deleteAndExpectGone(ns, "small")
	})

	// A named pipe's open waits for a writer, and a device reads without end: once, cp of a pipe hung until
	// killed and left a blocked thread in the agent per read. Each is refused at once, with what it is.
	It("refuses a named pipe, a device and a socket at once, with what each is", func(_ SpecContext) {
		ns := newNamespace("files-special")
		sessionWithWorkspace(ns, "box", "8Mi")
		inPrimary(ns, "box", "mkfifo /workspace/fifo /tmp/fifo && ln -s /dev/zero /workspace/zero")
		dir := GinkgoT().TempDir()
		for remote, what := range map[string]string{
			"/workspace/fifo": "/workspace/fifo is a named pipe (FIFO)", // the workspace volume
			"/tmp/fifo":       "/tmp/fifo is a named pipe (FIFO)",       // the container's own tmpfs
			"/workspace/zero": "/dev is a kernel file system",           // a link to a device
		} {
			start := time.Now()
			out := dockside("cp", "", "-n", ns, "box:"+remote, filepath.Join(dir, "copy"))
			GinkgoWriter.Printf("cp of %s ended in %v\n", remote, time.Since(start))
			Expect(out.code).To(Equal(1), out.stderr)
			Expect(out.stderr).To(ContainSubstring(what))
			Expect(time.Since(start)).To(BeNumerically("<", time.Minute), "refused at once, not after a wait")
		}
		Expect(os.ReadDir(dir)).To(BeEmpty(), "nothing was written locally")

		sock := filepath.Join(dir, "sock")
		l, err := net.Listen("unix", sock)
		Expect(err).NotTo(HaveOccurred())
		defer l.Close()
		out := dockside("cp", "", "-n", ns, sock, "box:/workspace/")
		Expect(out.code).To(Equal(1), out.stderr)
		Expect(out.stderr).To(ContainSubstring("is a socket"))
		Expect(strings.Fields(inPrimary(ns, "box", "ls -A /workspace"))).To(ConsistOf("fifo", "zero"), "nothing was sent")
		deleteAndExpectGone(ns, "box")
	}, SpecTimeout(5*time.Minute))
})
