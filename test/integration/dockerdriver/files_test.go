//go:build integration

package dockerdriver_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/files"
	"github.com/dockside-dev/dockside/internal/hostvolume"
)

// The files handler on the real driver: what the fake cannot show (symlinks resolved by the daemon, owners,
// the archive API's view of mounts, the volume's host side) is checked here, with the workspace served
// through the archive API and from its volume's host side alike.
var _ = Describe("Files handler, the workspace through the archive API", func() { filesHandlerSpecs(false) })

var _ = Describe("Files handler, the workspace on its volume's host side", func() {
	BeforeEach(func() {
		Expect(hostvolume.Access()).To(BeTrue(), "these tests run as root on the Docker host, with openat2")
	})
	filesHandlerSpecs(true)
})

func filesHandlerSpecs(hostVolumes bool) {
	const workspaceSize = 4 << 20
	var (
		h      = &files.Handler{HostVolumes: hostVolumes}
		target files.Target
		vol    string
	)
	BeforeEach(func(ctx SpecContext) {
		h.Driver = driver
		o := newOwner("files")
		vol = dd.Name(o, dsv1alpha1.RoleWorkspace, "")
		_, err := driver.EnsureVolume(ctx, dd.VolumeSpec{Name: vol, Owner: o, Role: dsv1alpha1.RoleWorkspace, SizeBytes: workspaceSize})
		Expect(err).NotTo(HaveOccurred())
		s := spec(o, dsv1alpha1.RolePrimary, "")
		s.Mounts = []dd.VolumeMount{{Volume: vol, Target: "/workspace"}}
		s.Tmpfs = []dd.TmpfsMount{{Target: "/tmp", SizeBytes: 1 << 20}}
		run(ctx, s)
		target = files.Target{Container: s.Name, Mounts: []files.Mount{
			{Path: "/workspace", SizeBytes: workspaceSize, Name: "the workspace", Volume: vol},
			{Path: "/tmp", SizeBytes: 1 << 20, Name: "/tmp", Tmpfs: true},
		}}
	})

	serve := func(method string, q url.Values, body io.Reader, size int64) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/files?"+q.Encode(), body)
		r.ContentLength = size
		rec := httptest.NewRecorder()
		h.Serve(rec, r, target)
		return rec
	}
	put := func(p string, data []byte) *httptest.ResponseRecorder {
		return serve(http.MethodPut, url.Values{"path": {p}}, bytes.NewReader(data), int64(len(data)))
	}
	get := func(p string) *httptest.ResponseRecorder {
		return serve(http.MethodGet, url.Values{"path": {p}}, nil, 0)
	}
	status := func(rec *httptest.ResponseRecorder, code int) string {
		GinkgoHelper()
		Expect(rec.Code).To(Equal(code), rec.Body.String())
		var st metav1.Status
		Expect(json.Unmarshal(rec.Body.Bytes(), &st)).To(Succeed())
		return st.Message
	}
	inContainer := func(ctx SpecContext, script string) string {
		GinkgoHelper()
		res := sh(ctx, target.Container, script, 30*time.Second)
		Expect(res.ExitCode).To(BeZero(), string(res.Stderr))
		return strings.TrimSpace(string(res.Stdout))
	}

	It("writes a file atomically as the container's user and reads it back", func(ctx SpecContext) {
		data := make([]byte, 3<<20)
		_, _ = rand.Read(data)
		Expect(put("/workspace/blob", data).Code).To(Equal(http.StatusCreated))
		rec := get("/workspace/blob")
		Expect(rec.Code).To(Equal(http.StatusOK))
		Expect(sha256.Sum256(rec.Body.Bytes())).To(Equal(sha256.Sum256(data)))
		Expect(inContainer(ctx, "stat -c '%u:%g %a' /workspace/blob; ls -A /workspace")).To(Equal("65532:65532 644\nblob"))
	})

	It("refuses the read-only root, and a full workspace leaves nothing half-written", func() {
		Expect(status(put("/etc/x", []byte("x")), http.StatusForbidden)).
			To(Equal("/etc/x is on the read-only root file system; write under /workspace or /tmp"))
		Expect(put("/workspace/first", make([]byte, 3<<20)).Code).To(Equal(http.StatusCreated))
		Expect(status(put("/workspace/second", make([]byte, 2<<20)), http.StatusInsufficientStorage)).
			To(Equal("the workspace is full: 4MiB"))
		rec := serve(http.MethodGet, url.Values{"op": {"list"}, "path": {"/workspace"}}, nil, 0)
		Expect(rec.Body.String()).To(ContainSubstring(`"name":"first"`))
		Expect(rec.Body.String()).NotTo(ContainSubstring("second"))
	})

	It("resolves symlinks in the container's root, never the host's, and never into the secret files", func(ctx SpecContext) {
		inContainer(ctx, "ln -s / /workspace/root; ln -s /proc /workspace/proc; ln -s /run/secrets/dockside/token /workspace/token; ln -s /etc /workspace/etc")
		_, err := os.Stat("/etc/shadow")
		Expect(err).NotTo(HaveOccurred(), "the host has /etc/shadow; the test image has not")
		Expect(status(get("/workspace/root/etc/shadow"), http.StatusNotFound)).To(Equal("/workspace/root/etc/shadow does not exist"))
		Expect(status(get("/workspace/proc/self/environ"), http.StatusForbidden)).To(ContainSubstring("/proc is a kernel file system"))
		Expect(status(get("/workspace/root/proc/1/environ"), http.StatusForbidden)).To(ContainSubstring("/proc is a kernel file system"))
		Expect(status(get("/workspace/token"), http.StatusForbidden)).To(ContainSubstring("secret files"))
		Expect(status(put("/workspace/etc/evil", []byte("x")), http.StatusForbidden)).To(ContainSubstring("read-only root file system"))
		Expect(status(put("/workspace/root/etc/evil", []byte("x")), http.StatusForbidden)).To(ContainSubstring("read-only root file system"))
		rec := serve(http.MethodGet, url.Values{"op": {"stat"}, "path": {"/workspace/root"}}, nil, 0)
		Expect(rec.Body.String()).To(ContainSubstring(`"type":"symlink","link":"/"`))
	})

	It("keeps a write inside the container when a process swaps its directory for a link mid-upload", func(ctx SpecContext) {
		inContainer(ctx, "mkdir /workspace/d")
		pr, pw := io.Pipe()
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			defer GinkgoRecover()
			done <- serve(http.MethodPut, url.Values{"path": {"/workspace/d/f"}}, pr, 2<<20)
		}()
		_, err := pw.Write(make([]byte, 1<<20))
		Expect(err).NotTo(HaveOccurred())
		inContainer(ctx, "mv /workspace/d /workspace/d2 && ln -s /etc /workspace/d")
		_, err = pw.Write(make([]byte, 1<<20))
		Expect(err).NotTo(HaveOccurred())
		Expect(pw.Close()).To(Succeed())
		var rec *httptest.ResponseRecorder
		Eventually(done).WithTimeout(time.Minute).Should(Receive(&rec))
		if hostVolumes {
			// The host's side holds the directory it opened, which the swap moved: the file lands there.
			Expect(rec.Code).To(Equal(http.StatusCreated), rec.Body.String())
			Expect(inContainer(ctx, "test ! -e /etc/f && ls -A /workspace/d2")).To(Equal("f"), "nothing reached the read-only root")
		} else {
			Expect(rec.Code).To(BeNumerically(">=", 400), "the daemon resolved the link onto the read-only root and refused: %s", rec.Body)
			Expect(inContainer(ctx, "test ! -e /etc/f && ls -A /workspace/d2")).To(BeEmpty(), "nothing reached the read-only root, nothing was left")
		}
		_, err = os.Stat("/etc/f")
		Expect(os.IsNotExist(err)).To(BeTrue(), "nor the host")
	})

	It("serves the container's own tmpfs mounts through its processes, bounded and atomic like the workspace", func(ctx SpecContext) {
		data := make([]byte, 600<<10)
		_, _ = rand.Read(data)
		Expect(put("/tmp/a", data).Code).To(Equal(http.StatusCreated))
		rec := get("/tmp/a")
		Expect(rec.Code).To(Equal(http.StatusOK))
		Expect(sha256.Sum256(rec.Body.Bytes())).To(Equal(sha256.Sum256(data)))
		Expect(inContainer(ctx, "stat -c '%u %s' /tmp/a")).To(Equal("65532 614400"), "the container's user's")
		Expect(status(put("/tmp/b", data), http.StatusInsufficientStorage)).To(Equal("/tmp is full: 1MiB"))
		Expect(inContainer(ctx, "ls -A /tmp")).To(Equal("a"), "nothing half-written is left")

		inContainer(ctx, "ln -s /run/secrets/dockside/token /tmp/token; ln -s /tmp /workspace/t; mkdir /tmp/d")
		Expect(status(get("/tmp/token"), http.StatusForbidden)).To(ContainSubstring("secret files"))
		rec = get("/workspace/t/a")
		Expect(rec.Code).To(Equal(http.StatusOK), "a link from the workspace into /tmp leads to the container's /tmp")
		Expect(rec.Body.Len()).To(Equal(len(data)))
		rec = serve(http.MethodGet, url.Values{"op": {"list"}, "path": {"/tmp"}}, nil, 0)
		Expect(rec.Body.String()).To(And(ContainSubstring(`"name":"a","size":614400`), ContainSubstring(`"name":"token"`)))
		out := serve(http.MethodGet, url.Values{"op": {"tar"}, "path": {"/workspace/t/d"}}, nil, 0)
		Expect(out.Code).To(Equal(http.StatusOK), out.Body.String())

		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		Expect(tw.WriteHeader(&tar.Header{Name: "sub/f", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})).To(Succeed())
		_, _ = tw.Write([]byte("hi"))
		Expect(tw.Close()).To(Succeed())
		in := serve(http.MethodPut, url.Values{"op": {"tar"}, "path": {"/tmp/d"}}, &buf, int64(buf.Len()))
		Expect(in.Code).To(Equal(http.StatusOK), in.Body.String())
		Expect(inContainer(ctx, "cat /tmp/d/sub/f; stat -c %u /tmp/d/sub")).To(Equal("hi65532"))
		Expect(serve(http.MethodDelete, url.Values{"path": {"/tmp/d"}, "recursive": {"true"}}, nil, 0).Code).To(Equal(http.StatusNoContent))
		Expect(serve(http.MethodPost, url.Values{"op": {"mkdir"}, "path": {"/tmp/x/y"}, "parents": {"true"}}, nil, 0).Code).To(Equal(http.StatusCreated))
		Expect(inContainer(ctx, "ls -A /tmp | sort | tr '\\n' ' '")).To(Equal("a token x"))
	})

	It("copies out no sparse file longer than its mount, and the spool takes nothing of the node's disk", func(ctx SpecContext) {
		spoolDir := GinkgoT().TempDir()
		h.SpoolDir = spoolDir
		DeferCleanup(func() { h.SpoolDir = "" })
		inContainer(ctx, "truncate -s 1G /tmp/hole && mkdir /workspace/d && truncate -s 1G /workspace/d/hole")
		Expect(status(get("/tmp/hole"), http.StatusRequestEntityTooLarge)).To(HavePrefix("/tmp/hole is 1GiB, more than /tmp (1MiB) holds (it is sparse"))
		Expect(status(serve(http.MethodGet, url.Values{"op": {"tar"}, "path": {"/tmp"}}, nil, 0), http.StatusRequestEntityTooLarge)).
			To(HavePrefix("the files of /tmp are more than /tmp (1MiB) holds"))
		Expect(status(serve(http.MethodGet, url.Values{"op": {"tar"}, "path": {"/workspace/d"}}, nil, 0), http.StatusRequestEntityTooLarge)).
			To(HavePrefix("the files of /workspace/d are more than the workspace (4MiB) holds"))
		if !hostVolumes { // the host side streams a read without spooling it: sent whole, holes as zeros
			Expect(status(get("/workspace/d/hole"), http.StatusRequestEntityTooLarge)).To(HavePrefix("/workspace/d/hole is 1GiB, more than the workspace (4MiB) holds"))
			Expect(status(serve(http.MethodGet, url.Values{"op": {"list"}, "path": {"/workspace/d"}}, nil, 0), http.StatusRequestEntityTooLarge)).
				To(HavePrefix("the files of /workspace/d are more than the workspace (4MiB) holds"))
		}
		left, err := os.ReadDir(spoolDir)
		Expect(err).NotTo(HaveOccurred())
		Expect(left).To(BeEmpty())
		Expect(inContainer(ctx, "echo ok > /tmp/small && rm /tmp/hole && cat /tmp/small")).To(Equal("ok"), "the container goes on")
		Expect(get("/tmp/small").Body.String()).To(Equal("ok\n"))
	})

	It("round-trips a directory as a tar stream, links included", func(ctx SpecContext) {
		inContainer(ctx, "mkdir -p /workspace/src/pkg && echo main > /workspace/src/main.go && echo lib > /workspace/src/pkg/lib.go && ln -s pkg/lib.go /workspace/src/link")
		out := serve(http.MethodGet, url.Values{"op": {"tar"}, "path": {"/workspace/src"}}, nil, 0)
		Expect(out.Code).To(Equal(http.StatusOK))
		archive := out.Body.Bytes()
		Expect(put("/workspace/ignored", nil).Code).To(Equal(http.StatusCreated))
		inContainer(ctx, "mkdir /workspace/copy")
		in := serve(http.MethodPut, url.Values{"op": {"tar"}, "path": {"/workspace/copy"}}, bytes.NewReader(archive), int64(len(archive)))
		Expect(in.Code).To(Equal(http.StatusOK), in.Body.String())
		Expect(inContainer(ctx, "cd /workspace/copy && find . | sort && cat pkg/lib.go && readlink link && stat -c %u main.go")).
			To(Equal(".\n./link\n./main.go\n./pkg\n./pkg/lib.go\nlib\npkg/lib.go\n65532"))
		names := map[string]bool{}
		tr := tar.NewReader(bytes.NewReader(archive))
		for hdr, err := tr.Next(); err == nil; hdr, err = tr.Next() {
			names[hdr.Name] = true
		}
		Expect(names).To(HaveKey("./pkg/lib.go"))
	})

	It("never extracts a tar entry through a link the container made", func(ctx SpecContext) {
		inContainer(ctx, "mkdir /workspace/x && ln -s /etc /workspace/x/etc")
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		Expect(tw.WriteHeader(&tar.Header{Name: "etc/evil", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})).To(Succeed())
		_, _ = tw.Write([]byte("x"))
		Expect(tw.Close()).To(Succeed())
		rec := serve(http.MethodPut, url.Values{"op": {"tar"}, "path": {"/workspace/x"}}, &buf, int64(buf.Len()))
		Expect(status(rec, http.StatusConflict)).To(ContainSubstring("a directory of the archive is a file or a link in /workspace/x"))
		Expect(inContainer(ctx, "test ! -e /etc/evil && readlink /workspace/x/etc")).To(Equal("/etc"))
	})

	It("reads and writes the workspace without the archive API when its volume's mount is visible here", func(ctx SpecContext) {
		h.Driver = noArchive{driver}
		defer func() { h.Driver = driver }()
		data := make([]byte, 2<<20)
		_, _ = rand.Read(data)
		rec := put("/workspace/blob", data)
		if !hostVolumes {
			Expect(rec.Code).To(Equal(http.StatusInternalServerError), "the archive API serves it: %s", rec.Body)
			return
		}
		Expect(rec.Code).To(Equal(http.StatusCreated), rec.Body.String())
		Expect(inContainer(ctx, "stat -c '%u:%g %a %s' /workspace/blob; ls -A /workspace")).To(Equal("65532:65532 644 2097152\nblob"))
		rec = get("/workspace/blob")
		Expect(rec.Code).To(Equal(http.StatusOK))
		Expect(sha256.Sum256(rec.Body.Bytes())).To(Equal(sha256.Sum256(data)))
	})

	It("falls back to the archive API where the volume's path is not its mount", func(ctx SpecContext) {
		h.Driver = elsewhere{Driver: driver, mountpoint: GinkgoT().TempDir()}
		defer func() { h.Driver = driver }()
		Expect(put("/workspace/f", []byte("in the container")).Code).To(Equal(http.StatusCreated))
		Expect(inContainer(ctx, "cat /workspace/f")).To(Equal("in the container"))
		Expect(os.ReadDir(h.Driver.(elsewhere).mountpoint)).To(BeEmpty(), "nothing went to the directory that is not the volume")
	})
}

// noArchive is the driver without its archive calls: what still works does not need them.
type noArchive struct{ dd.Driver }

func (noArchive) CopyFrom(context.Context, string, string) (io.ReadCloser, error) {
	return nil, errors.New("no archive API in this test")
}

func (noArchive) CopyToAsUser(context.Context, string, string, io.Reader) error {
	return errors.New("no archive API in this test")
}

// elsewhere is the driver reporting every volume at a directory that is not its mount, as an agent in a
// pod sees a host path that does not propagate mounts.
type elsewhere struct {
	dd.Driver
	mountpoint string
}

func (e elsewhere) ObserveVolume(ctx context.Context, name string) (dd.VolumeInfo, error) {
	info, err := e.Driver.ObserveVolume(ctx, name)
	info.Mountpoint = e.mountpoint
	return info, err //nolint:wrapcheck // the driver's own
}
