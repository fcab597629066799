//go:build integration

package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// fakeGo stands in for the go command on PATH: a "build" sleeps FAKE_GO_SLEEP seconds and writes its -o file, or
// fails when FAKE_GO_FAIL is set. Every call leaves a mark in FAKE_GO_CALLS, so a test can tell nothing was built.
const fakeGo = `#!/usr/bin/env bash
echo "$*" >> "$FAKE_GO_CALLS"
while [[ $# -gt 0 ]]; do [[ $1 == -o ]] && out=$2; shift; done
sleep "${FAKE_GO_SLEEP:-0}"
[[ -z "${FAKE_GO_FAIL:-}" ]] || { echo "fake go: build failed" >&2; exit 1; }
printf '#!/bin/sh\n' > "$out" && chmod +x "$out"
`

// What `make run` does on a new machine (README "Two commands"): the control plane build says every so often
// that it is still going, a user's own envtest binaries are used as they are, and the agent logs for a person.
// No test here builds the real control plane: a fake go command stands in for the compiler.
var _ = Describe("make run's first start", func() {
	var fakeBin, calls string

	BeforeEach(func() {
		fakeBin = GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(fakeBin, "go"), []byte(fakeGo), 0o755)).To(Succeed())
		calls = filepath.Join(fakeBin, "calls")
	})

	// script runs hack/build-controlplane.sh (from the repository, or the copy at scriptPath) with the fake go
	// first on PATH, in its own process group so that a test can interrupt it as Ctrl-C would.
	script := func(scriptPath string, env ...string) *exec.Cmd {
		cmd := exec.Command("bash", scriptPath)
		cmd.Env = append(os.Environ(), "PATH="+fakeBin+":"+os.Getenv("PATH"), "FAKE_GO_CALLS="+calls,
			"KUBEBUILDER_ASSETS=")
		cmd.Env = append(cmd.Env, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
	// copyTree gives the script a repository of its own to build into, so that the real bin/k8s is never touched.
	copyTree := func() (scriptPath, outDir string) {
		root := GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(root, "hack", "tools"), 0o755)).To(Succeed())
		for _, f := range []string{"hack/build-controlplane.sh", "hack/tools/go.mod"} {
			data, err := os.ReadFile(filepath.Join(repoRoot, f))
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(filepath.Join(root, f), data, 0o644)).To(Succeed())
		}
		return filepath.Join(root, "hack", "build-controlplane.sh"), filepath.Join(root, "bin", "k8s", "v1.37.2-etcdv3.7.0")
	}
	// stubAssets is a folder of tiny executables named like envtest's binaries.
	stubAssets := func(names ...string) string {
		dir := GinkgoT().TempDir()
		for _, name := range names {
			Expect(os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
		}
		return dir
	}
	// finish runs cmd to its end and says how long until its output closed: a process of the script left
	// behind would still hold stdout or stderr open, past the 20 s that Wait then gives it.
	finish := func(cmd *exec.Cmd) (stdout, stderr string, took time.Duration, err error) {
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cmd.WaitDelay = 20 * time.Second
		start := time.Now()
		err = cmd.Run()
		return out.String(), errOut.String(), time.Since(start), err
	}

	It("uses the envtest binaries KUBEBUILDER_ASSETS names and builds nothing", func() {
		assets := stubAssets("etcd", "kube-apiserver", "kubectl")
		stdout, stderr, _, err := finish(script(filepath.Join(repoRoot, "hack", "build-controlplane.sh"), "KUBEBUILDER_ASSETS="+assets))
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal(assets+"\n"), "stdout is the folder and nothing else: the Makefile captures it")
		Expect(stderr).To(ContainSubstring(">> using envtest binaries from " + assets))
		Expect(calls).NotTo(BeAnExistingFile(), "nothing was built")
	})

	It("says what KUBEBUILDER_ASSETS lacks and fails rather than building behind the user's back", func() {
		assets := stubAssets("etcd", "kube-apiserver")
		stdout, stderr, _, err := finish(script(filepath.Join(repoRoot, "hack", "build-controlplane.sh"), "KUBEBUILDER_ASSETS="+assets))
		Expect(err).To(HaveOccurred())
		Expect(stdout).To(BeEmpty())
		Expect(stderr).To(ContainSubstring("lacks kubectl"))
		Expect(calls).NotTo(BeAnExistingFile())
	})

	It("says while a binary builds that it is still building, on stderr, and prints only the folder on stdout", func() {
		scriptPath, outDir := copyTree()
		stdout, stderr, _, err := finish(script(scriptPath, "BUILD_PROGRESS_EVERY=1", "FAKE_GO_SLEEP=1.5"))
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(Equal(outDir + "\n"))
		Expect(stderr).To(MatchRegexp(`>> building kube-apiserver v1\.37\.2: \d+s so far`))
		Expect(stderr).To(MatchRegexp(`>> building etcd v3\.7\.0: \d+s so far`))
		Expect(stderr).To(MatchRegexp(`>> building kubectl v1\.37\.2: \d+s so far`))
		for _, name := range []string{"kube-apiserver", "etcd", "kubectl"} {
			Expect(filepath.Join(outDir, name)).To(BeAnExistingFile())
		}
	})

	It("leaves no ticker behind when a build fails", func() {
		scriptPath, _ := copyTree()
		// A ticker of 30 s that outlived the script would hold stderr open for 30 s.
		stdout, stderr, took, err := finish(script(scriptPath, "FAKE_GO_FAIL=1"))
		Expect(err).To(HaveOccurred())
		Expect(stdout).To(BeEmpty())
		Expect(stderr).To(ContainSubstring("fake go: build failed"))
		Expect(took).To(BeNumerically("<", 15*time.Second))
	})

	It("stops the build and the ticker at once on Ctrl-C", func() {
		scriptPath, _ := copyTree()
		cmd := script(scriptPath, "FAKE_GO_SLEEP=60")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cmd.WaitDelay = 20 * time.Second
		Expect(cmd.Start()).To(Succeed())
		Eventually(calls).WithTimeout(10 * time.Second).Should(BeAnExistingFile()) // the build runs
		interrupted := time.Now()
		Expect(syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)).To(Succeed()) // the whole group, as a terminal does
		err := cmd.Wait()
		Expect(err).To(HaveOccurred())
		Expect(cmd.ProcessState.ExitCode()).To(Equal(130), errOut.String())
		Expect(out.String()).To(BeEmpty())
		// Neither the 60 s build nor a 30 s ticker kept the output open.
		Expect(time.Since(interrupted)).To(BeNumerically("<", 15*time.Second))
	})

	It("has the agent of make run log in console encoding", func() {
		cmd := exec.Command("make", "-n", "run")
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		var agentLine string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "bin/dockside-agent") {
				agentLine = line
			}
		}
		Expect(agentLine).To(ContainSubstring("--zap-encoder=console"), string(out))
	})

	It("has make run serve the E2B gateway on loopback at E2B_PORT", func() {
		cmd := exec.Command("make", "-n", "run", "E2B_PORT=3999")
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(MatchRegexp(`-e2b-gateway bin/dockside-e2b -e2b-listen 127\.0\.0\.1:3999 +-- bin/dockside-agent`))
	})

	It("passes E2B_DOMAIN and the TLS pair to the gateway only when they are set", func() {
		cmd := exec.Command("make", "-n", "run", "E2B_DOMAIN=e2b.test", "E2B_TLS_CERT=c.pem", "E2B_TLS_KEY=k.pem")
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(ContainSubstring("-e2b-domain e2b.test -e2b-tls-cert c.pem -e2b-tls-key k.pem -- bin/dockside-agent"))
	})
})
