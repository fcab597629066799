package files

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

const workspaceSize = 1 << 20

// env is a running primary on the fake driver with a 1 MiB workspace at /workspace and a /tmp of its own.
type env struct {
	t      *testing.T
	docker *fake.Driver
	h      *Handler
	target Target
}

func newEnv(t *testing.T) *env {
	g, ctx := NewWithT(t), context.Background()
	d := fake.New("node-a")
	d.AddImage("busybox", dd.ImageInfo{})
	owner := dd.Owner{Namespace: "ns", Name: "sbx", UID: "uid-1", Generation: 1}
	vol := dd.Name(owner, dsv1alpha1.RoleWorkspace, "")
	_, err := d.EnsureVolume(ctx, dd.VolumeSpec{Name: vol, Owner: owner, Role: dsv1alpha1.RoleWorkspace, SizeBytes: workspaceSize})
	g.Expect(err).NotTo(HaveOccurred())
	spec := dd.ContainerSpec{
		Name: dd.Name(owner, dsv1alpha1.RolePrimary, ""), Owner: owner, Role: dsv1alpha1.RolePrimary, Image: "busybox",
		Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64},
		Mounts:    []dd.VolumeMount{{Volume: vol, Target: "/workspace"}},
		Tmpfs:     []dd.TmpfsMount{{Target: "/tmp", SizeBytes: 1 << 20}},
	}
	_, err = d.EnsureContainer(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.StartContainer(ctx, spec.Name)).To(Succeed())
	return &env{t: t, docker: d, h: &Handler{Driver: d}, target: Target{
		Container: spec.Name,
		Mounts: []Mount{
			{Path: "/workspace", SizeBytes: workspaceSize, Name: "the workspace"},
			{Path: "/tmp", SizeBytes: 1 << 20, Name: "/tmp", Tmpfs: true},
		},
	}}
}

// do serves one request; query is op=...&path=... unescaped pairs.
func (e *env) do(method string, query map[string]string, body io.Reader) *httptest.ResponseRecorder {
	q := url.Values{}
	for k, v := range query {
		q.Set(k, v)
	}
	r := httptest.NewRequest(method, "/files?"+q.Encode(), body)
	rec := httptest.NewRecorder()
	e.h.Serve(rec, r, e.target)
	return rec
}

func (e *env) put(p, content string) *httptest.ResponseRecorder {
	return e.do(http.MethodPut, map[string]string{"path": p}, strings.NewReader(content))
}

func (e *env) get(p string) *httptest.ResponseRecorder {
	return e.do(http.MethodGet, map[string]string{"path": p}, nil)
}

func (e *env) list(p string) []string {
	rec := e.do(http.MethodGet, map[string]string{"op": "list", "path": p}, nil)
	NewWithT(e.t).Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
	var items []FileInfo
	NewWithT(e.t).Expect(json.Unmarshal(rec.Body.Bytes(), &items)).To(Succeed())
	names := []string{}
	for _, it := range items {
		names = append(names, it.Name)
	}
	return names
}

// status decodes a failure and checks its code.
func status(t *testing.T, rec *httptest.ResponseRecorder, code int) metav1.Status {
	t.Helper()
	g := NewWithT(t)
	g.Expect(rec.Code).To(Equal(code), rec.Body.String())
	var st metav1.Status
	g.Expect(json.Unmarshal(rec.Body.Bytes(), &st)).To(Succeed())
	g.Expect(st.Kind).To(Equal("Status"))
	g.Expect(st.Code).To(BeEquivalentTo(code))
	return st
}

func TestCleanPath(t *testing.T) {
	g := NewWithT(t)
	for raw, want := range map[string]string{
		"/workspace/./a//b/": "/workspace/a/b", "/workspace/a/../b": "/workspace/b", "/": "/", "/a/..": "/",
	} {
		got, err := cleanPath(raw)
		g.Expect(err).NotTo(HaveOccurred(), raw)
		g.Expect(got).To(Equal(want), raw)
	}
	for _, raw := range []string{"", "workspace/a", "/..", "/workspace/../../etc", "/a/../../b", "/a\x00b", "/" + strings.Repeat("a", 5000)} {
		_, err := cleanPath(raw)
		var se *fileswire.StatusError
		g.Expect(errors.As(err, &se)).To(BeTrue(), "%q", raw)
		g.Expect(se.Status.Code).To(BeEquivalentTo(http.StatusBadRequest), "%q", raw)
	}
}

func TestVerb(t *testing.T) {
	g := NewWithT(t)
	for method, verb := range map[string]string{"GET": "get", "HEAD": "get", "PUT": "create", "POST": "create", "DELETE": "create"} {
		g.Expect(Verb(httptest.NewRequest(method, "/files?op=tar&path=/workspace", nil))).To(Equal(verb), method)
	}
}

func TestWriteThenReadStatAndList(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	rec := e.do(http.MethodPut, map[string]string{"path": "/workspace/notes.txt", "mode": "0600"}, strings.NewReader("hello\n"))
	g.Expect(rec.Code).To(Equal(http.StatusCreated), rec.Body.String())
	var info FileInfo
	g.Expect(json.Unmarshal(rec.Body.Bytes(), &info)).To(Succeed())
	g.Expect([]any{info.Name, info.Size, info.Mode, info.Type}).To(Equal([]any{"notes.txt", int64(6), "0600", "file"}))

	rec = e.get("/workspace/notes.txt")
	g.Expect(rec.Code).To(Equal(http.StatusOK))
	g.Expect(rec.Body.String()).To(Equal("hello\n"))
	g.Expect(rec.Header().Get("Content-Length")).To(Equal("6"))

	g.Expect(e.put("/workspace/notes.txt", "replaced").Code).To(Equal(http.StatusCreated))
	g.Expect(e.get("/workspace/notes.txt").Body.String()).To(Equal("replaced"))
	g.Expect(e.list("/workspace")).To(Equal([]string{"notes.txt"}), "no temporary file is left")

	rec = e.do(http.MethodGet, map[string]string{"op": "stat", "path": "/workspace"}, nil)
	g.Expect(json.Unmarshal(rec.Body.Bytes(), &info)).To(Succeed())
	g.Expect(info.Type).To(Equal("dir"))
}

func TestRefusals(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name, method, path string
		code               int
		message            string
	}{
		{"the read-only root", http.MethodPut, "/etc/passwd", http.StatusForbidden, "/etc/passwd is on the read-only root file system; write under /workspace or /tmp"},
		{"secret files", http.MethodGet, "/run/secrets/dockside/token", http.StatusForbidden, "the Sandbox's secret files"},
		{"the secret files' directory", http.MethodGet, "/run/secrets/dockside", http.StatusForbidden, "secret files"},
		{"the kernel's files", http.MethodGet, "/proc/self/environ", http.StatusForbidden, "/proc is a kernel file system"},
		{"a missing file", http.MethodGet, "/workspace/missing", http.StatusNotFound, "/workspace/missing does not exist"},
		{"a write into a missing directory", http.MethodPut, "/workspace/no/such", http.StatusNotFound, "the directory /workspace/no does not exist"},
		{"a relative path", http.MethodGet, "workspace", http.StatusBadRequest, "not absolute"},
		{"a path above /", http.MethodGet, "/../etc/shadow", http.StatusBadRequest, "climbs above /"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := status(t, e.do(c.method, map[string]string{"path": c.path}, strings.NewReader("x")), c.code)
			NewWithT(t).Expect(st.Message).To(ContainSubstring(c.message))
		})
	}
}

func TestWriteLargerThanTheMountIsRefusedAtOnce(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	st := status(t, e.put("/workspace/big", strings.Repeat("x", workspaceSize+1)), http.StatusInsufficientStorage)
	g.Expect(st.Message).To(Equal("/workspace/big (1048577B) is larger than the workspace: 1MiB"))
	g.Expect(e.docker.Calls(fake.OpCopyToAsUser)).To(BeZero())
}

func TestAnUploadOfUnknownLengthPastTheMountIsRefused(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	r := httptest.NewRequest(http.MethodPut, "/files?path=/workspace/big", strings.NewReader(strings.Repeat("x", workspaceSize+1)))
	r.ContentLength = -1 // chunked
	rec := httptest.NewRecorder()
	e.h.Serve(rec, r, e.target)
	g.Expect(status(t, rec, http.StatusInsufficientStorage).Message).To(Equal("/workspace/big is larger than the workspace: 1MiB"))
	g.Expect(e.docker.Calls(fake.OpCopyToAsUser)).To(BeZero())
}

func TestAFullWorkspaceLeavesNothingHalfWritten(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	g.Expect(e.put("/workspace/first", strings.Repeat("a", 600<<10)).Code).To(Equal(http.StatusCreated))
	g.Expect(e.put("/workspace/keep", "kept").Code).To(Equal(http.StatusCreated))
	st := status(t, e.put("/workspace/keep", strings.Repeat("b", 600<<10)), http.StatusInsufficientStorage)
	g.Expect(st.Message).To(Equal("the workspace is full: 1MiB"))
	g.Expect(e.list("/workspace")).To(Equal([]string{"first", "keep"}), "the part written was removed")
	g.Expect(e.get("/workspace/keep").Body.String()).To(Equal("kept"))
}

func TestALostAnswerMidUploadLeavesNothingHalfWritten(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	g.Expect(e.put("/workspace/keep", "kept").Code).To(Equal(http.StatusCreated))
	e.docker.LoseNextResponse(fake.OpCopyToAsUser)
	status(t, e.put("/workspace/keep", strings.Repeat("n", 64<<10)), http.StatusInternalServerError)
	g.Expect(e.list("/workspace")).To(Equal([]string{"keep"}))
	g.Expect(e.get("/workspace/keep").Body.String()).To(Equal("kept"))
}

func TestABodyCutShortLeavesNothingHalfWritten(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	g.Expect(e.put("/workspace/keep", "kept").Code).To(Equal(http.StatusCreated))
	cut := io.MultiReader(strings.NewReader(strings.Repeat("c", 100)), iotest.ErrReader(io.ErrUnexpectedEOF))
	r := httptest.NewRequest(http.MethodPut, "/files?path=/workspace/keep", cut)
	r.ContentLength = 1000
	rec := httptest.NewRecorder()
	e.h.Serve(rec, r, e.target)
	st := status(t, rec, http.StatusBadRequest)
	g.Expect(st.Message).To(Equal("the upload broke off after 100 bytes; nothing was written"))
	g.Expect(e.list("/workspace")).To(Equal([]string{"keep"}))
	g.Expect(e.get("/workspace/keep").Body.String()).To(Equal("kept"))
}

func TestAFailedRenameRemovesTheTemporaryFile(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	e.docker.FailNext(fake.OpRenamePath, dd.KindConflict)
	status(t, e.put("/workspace/f", "new"), http.StatusConflict)
	g.Expect(e.list("/workspace")).To(BeEmpty())
}

func TestAnImageWithoutRmIsRefusedBeforeAnyUpload(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	e.docker.FailNext(fake.OpRemovePath, dd.KindInvalidSpec)
	status(t, e.put("/workspace/f", "new"), http.StatusNotImplemented)
	g.Expect(e.docker.Calls(fake.OpCopyToAsUser)).To(BeZero())
}

func TestAPausedSandboxIsReadButNotChanged(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	g.Expect(e.put("/workspace/f", "data").Code).To(Equal(http.StatusCreated))
	g.Expect(e.docker.PauseContainer(context.Background(), e.target.Container)).To(Succeed())
	g.Expect(e.get("/workspace/f").Body.String()).To(Equal("data"))
	for _, rec := range []*httptest.ResponseRecorder{
		e.put("/workspace/f", "new"),
		e.do(http.MethodPost, map[string]string{"op": "mkdir", "path": "/workspace/d"}, nil),
		e.do(http.MethodDelete, map[string]string{"path": "/workspace/f"}, nil),
	} {
		g.Expect(status(t, rec, http.StatusConflict).Message).To(ContainSubstring("the Sandbox is paused"))
	}
	e.target.Paused = true // as the Sandbox says, before its containers are
	g.Expect(e.docker.UnpauseContainer(context.Background(), e.target.Container)).To(Succeed())
	status(t, e.put("/workspace/f", "new"), http.StatusConflict)
}

func TestMkdirAndRemove(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	mkdir := func(p string, parents bool) *httptest.ResponseRecorder {
		q := map[string]string{"op": "mkdir", "path": p}
		if parents {
			q["parents"] = "true"
		}
		return e.do(http.MethodPost, q, nil)
	}
	status(t, mkdir("/workspace/a/b", false), http.StatusNotFound)
	g.Expect(mkdir("/workspace/a/b", true).Code).To(Equal(http.StatusCreated))
	g.Expect(mkdir("/workspace/a/b", true).Code).To(Equal(http.StatusOK), "like mkdir -p")
	status(t, mkdir("/workspace/a/b", false), http.StatusConflict)
	g.Expect(e.put("/workspace/a/b/f", "f").Code).To(Equal(http.StatusCreated))
	g.Expect(e.list("/workspace/a")).To(Equal([]string{"b"}))

	del := func(p string, recursive bool) *httptest.ResponseRecorder {
		q := map[string]string{"path": p}
		if recursive {
			q["recursive"] = "true"
		}
		return e.do(http.MethodDelete, q, nil)
	}
	status(t, del("/workspace/a", false), http.StatusConflict)
	status(t, del("/workspace", true), http.StatusForbidden)
	status(t, del("/", true), http.StatusForbidden)
	g.Expect(del("/workspace/a", true).Code).To(Equal(http.StatusNoContent))
	status(t, del("/workspace/a", true), http.StatusNotFound)
	g.Expect(e.list("/workspace")).To(BeEmpty())
}

func TestTarOutAndIn(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	in := tarOf(t, map[string]string{"src/": "", "src/main.go": "package main\n", "README": "hi\n"})
	rec := e.do(http.MethodPut, map[string]string{"op": "tar", "path": "/workspace"}, bytes.NewReader(in))
	g.Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
	g.Expect(e.get("/workspace/src/main.go").Body.String()).To(Equal("package main\n"))

	rec = e.do(http.MethodGet, map[string]string{"op": "tar", "path": "/workspace"}, nil)
	g.Expect(rec.Code).To(Equal(http.StatusOK))
	g.Expect(rec.Header().Get("Content-Type")).To(Equal("application/x-tar"))
	g.Expect(entries(t, rec.Body)).To(Equal(map[string]string{"./": "", "./README": "hi\n", "./src/": "", "./src/main.go": "package main\n"}))
}

// An archive is read to the body's end, past its end marker: the call is answered after the upload has
// ended, tar's padding is taken, and a body that breaks or goes on after the archive extracts nothing.
func TestTarInReadsTheBodyToItsEnd(t *testing.T) {
	archive := tarOf(t, map[string]string{"README": "hi\n"})
	for _, tc := range []struct {
		name    string
		after   io.Reader
		code    int
		message string
	}{
		{name: "tar's record padding", after: bytes.NewReader(make([]byte, 10<<10)), code: http.StatusOK},
		{
			name: "a body that breaks after the archive", after: iotest.ErrReader(io.ErrUnexpectedEOF), code: http.StatusBadRequest,
			message: "what follows the archive's end could not be read: unexpected EOF; nothing was extracted",
		},
		{
			name: "more than padding after the archive", after: bytes.NewReader(make([]byte, trailingMax+1)), code: http.StatusBadRequest,
			message: "the archive is followed by more than 64KiB of data that is not part of it; nothing was extracted",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, e := NewWithT(t), newEnv(t)
			rec := e.do(http.MethodPut, map[string]string{"op": "tar", "path": "/workspace"}, io.MultiReader(bytes.NewReader(archive), tc.after))
			if tc.code == http.StatusOK {
				g.Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
				g.Expect(e.list("/workspace")).To(Equal([]string{"README"}))
				return
			}
			g.Expect(status(t, rec, tc.code).Message).To(Equal(tc.message))
			g.Expect(e.list("/workspace")).To(BeEmpty())
		})
	}
}

func TestTarInRefusesEntriesOutsideTheDirectoryAndDevices(t *testing.T) {
	e := newEnv(t)
	for name, hdr := range map[string]*tar.Header{
		"climbs":    {Name: "../escape", Typeflag: tar.TypeReg},
		"absolute":  {Name: "/etc/x", Typeflag: tar.TypeReg},
		"hard link": {Name: "l", Linkname: "../../etc/shadow", Typeflag: tar.TypeLink},
		"device":    {Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			hdr.Mode = 0o644
			NewWithT(t).Expect(tw.WriteHeader(hdr)).To(Succeed())
			NewWithT(t).Expect(tw.Close()).To(Succeed())
			status(t, e.do(http.MethodPut, map[string]string{"op": "tar", "path": "/workspace"}, &buf), http.StatusBadRequest)
			NewWithT(t).Expect(e.list("/workspace")).To(BeEmpty())
		})
	}
}

func TestTargetFor(t *testing.T) {
	g := NewWithT(t)
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u"}}
	_, err := TargetFor(sbx)
	g.Expect(err).To(MatchError("the Sandbox has no primary container yet (phase Pending)"))
	sbx.Status.TopologyGeneration = 2
	sbx.Spec.Lifecycle = dsv1alpha1.LifecyclePaused
	got, err := TargetFor(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Container).To(Equal(dd.Name(dd.Owner{Namespace: "ns", Name: "s", UID: "u", Generation: 2}, dsv1alpha1.RolePrimary, "")))
	g.Expect(got.Mounts).To(Equal([]Mount{
		{
			Path: "/workspace", SizeBytes: 512 << 20, Name: "the workspace",
			Volume: dd.Name(dd.Owner{Namespace: "ns", Name: "s", UID: "u"}, dsv1alpha1.RoleWorkspace, ""),
		},
		{Path: "/tmp", SizeBytes: 64 << 20, Name: "/tmp", Tmpfs: true},
	}))
	g.Expect(got.Paused).To(BeTrue())
}

// tarOf is an archive of name to content; names ending in / are directories.
func tarOf(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		hdr := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}
		if strings.HasSuffix(n, "/") {
			hdr.Mode, hdr.Typeflag = 0o755, tar.TypeDir
		}
		NewWithT(t).Expect(tw.WriteHeader(hdr)).To(Succeed())
		_, _ = tw.Write([]byte(files[n]))
	}
	NewWithT(t).Expect(tw.Close()).To(Succeed())
	return buf.Bytes()
}

// entries reads an archive back as name to content.
func entries(t *testing.T, r io.Reader) map[string]string {
	out := map[string]string{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		data, _ := io.ReadAll(tr)
		out[hdr.Name] = string(data)
	}
}

// An entry under a link the archive made (or the container) comes after a directory entry of the link's
// name, which Docker's extraction puts in the link's place.
func TestCheckedTarDeclaresEveryParent(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, hdr := range []*tar.Header{
		{Name: "l", Linkname: "/etc", Typeflag: tar.TypeSymlink},
		{Name: "l/evil", Mode: 0o644, Typeflag: tar.TypeReg},
		{Name: "./src/", Mode: 0o700, Typeflag: tar.TypeDir},
		{Name: "src/a/b", Mode: 0o644, Typeflag: tar.TypeReg},
	} {
		g.Expect(tw.WriteHeader(hdr)).To(Succeed())
	}
	g.Expect(tw.Close()).To(Succeed())
	var names []string
	tr := tar.NewReader(checkedTar(&buf))
	for hdr, err := tr.Next(); err != io.EOF; hdr, err = tr.Next() {
		g.Expect(err).NotTo(HaveOccurred())
		names = append(names, hdr.Name)
	}
	g.Expect(names).To(Equal([]string{"l", "l/", "l/evil", "./src/", "src/a/", "src/a/b"}))
}

func TestParseStat(t *testing.T) {
	g := NewWithT(t)
	st, err := parseStat("/tmp/f", "81a4 6 1700000000\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st).To(Equal(dd.PathStat{Name: "f", Size: 6, Mode: 0o644, Mtime: time.Unix(1700000000, 0)}))
	st, err = parseStat("/tmp/d", "41ed 60 1700000000\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.IsDir()).To(BeTrue())
	g.Expect(st.Mode.Perm()).To(Equal(fs.FileMode(0o755)))
	st, err = parseStat("/tmp/l", "a1ff 4 1700000000\n/run/secrets/dockside/token\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode & fs.ModeSymlink).NotTo(BeZero())
	g.Expect(st.LinkTarget).To(Equal("/run/secrets/dockside/token"))
	st, err = parseStat("/tmp/l", "a1ff 4 1700000000\n../etc/x\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.LinkTarget).To(Equal("/etc/x"), "a link that leads nowhere, as written, from its directory")
	_, err = parseStat("x", "stat: garbage")
	g.Expect(dd.IsUncertain(err)).To(BeTrue())
}
