package bench

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// filesMiB is the size of the file the files benchmark copies in and out.
const filesMiB = 100

// dockerCopyInOut times `docker cp` of the file local into the container's /workspace/docker.bin, then of
// that copy out to the file out: the baseline of the files benchmarks.
func dockerCopyInOut(container, local, out string) (in, back time.Duration, err error) {
	in, err = timed(func() error {
		_, err := docker("cp", local, container+":/workspace/docker.bin")
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	back, err = timed(func() error {
		_, err := docker("cp", container+":/workspace/docker.bin", out)
		return err
	})
	return in, back, err
}

// BenchmarkFiles uploads and downloads a 100 MiB random file through the files subresource (the API server,
// the aggregated data plane, the agent, the workspace's host side or Docker's archive API) over the
// WebSocket upgrade against `docker cp` of the same file into and
// out of the same Sandbox's primary in the same run, in MB/s; both copies must come back byte for byte.
func BenchmarkFiles(b *testing.B) {
	e, ns := benchNamespace(b, "files")
	ctx := context.Background()
	sbx := session(ns, "box")
	sbx.Spec.Workspace.Size = resource.MustParse("320Mi") // both copies of the file, and room
	if err := e.applyAndRead(ctx, sbx); err != nil {
		b.Fatal(err)
	}
	local, want, err := randomFile(filepath.Join(runDir, "files-in.bin"), filesMiB*mib)
	if err != nil {
		b.Fatal(err)
	}
	g := group{
		Key:      "files",
		Title:    fmt.Sprintf("Copy of a %d MiB file into and out of a Sandbox through the files subresource", filesMiB),
		Baseline: "docker cp of the same file into and out of the Sandbox's primary container",
	}
	defer func() { record(b, g) }()

	byHandIn, byHandOut, err := dockerCopyInOut(sbx.Status.ContainerID, local, filepath.Join(runDir, "docker-out.bin"))
	if err != nil {
		b.Fatal(err)
	}

	f, err := newFilesURL(e.cfg, ns, sbx.Name)
	if err != nil {
		b.Fatal(err)
	}
	in, err := timed(func() error { return f.upload(ctx, local, "/workspace/files.bin") })
	if errors.Is(err, errNotImplemented) {
		g.Figures = append(g.Figures, notMeasured("upload and download", "MB/s", "the API server does not serve the files subresource"))
		return
	} else if err != nil {
		b.Fatal(err)
	}
	back := filepath.Join(runDir, "files-out.bin")
	out, err := timed(func() error { return f.download(ctx, "/workspace/files.bin", back) })
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{back, filepath.Join(runDir, "docker-out.bin")} {
		if got, err := sha256File(p); err != nil || got != want {
			b.Fatalf("%s differs from what was copied in: %s, want %s (%v)", p, got, want, err)
		}
	}
	g.Figures = append(g.Figures,
		figure{Name: "upload", Unit: "MB/s", Dockside: mbps(filesMiB*mib, in), Baseline: mbps(filesMiB*mib, byHandIn)},
		figure{Name: "download", Unit: "MB/s", Dockside: mbps(filesMiB*mib, out), Baseline: mbps(filesMiB*mib, byHandOut)},
	)
}

func mbps(bytes int64, d time.Duration) *float64 { return num(float64(bytes) / 1e6 / d.Seconds()) }

// filesURL is the files subresource of one Sandbox, reached with the benchmark's credentials; bodies travel
// over the WebSocket upgrade, as the clients send them (docs/design/dataplane-files.md).
type filesURL struct {
	cfg  *rest.Config
	base *url.URL
}

func newFilesURL(cfg *rest.Config, ns, name string) (*filesURL, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	return &filesURL{cfg: cfg, base: base.JoinPath("apis/subresources.dockside.dev/v1alpha1/namespaces", ns, "sandboxes", name, "files")}, nil
}

// dial opens the upgraded call q as method; an API server without the data plane is errNotImplemented.
func (f *filesURL) dial(ctx context.Context, method string, q url.Values) (*websocket.Conn, error) {
	u := *f.base
	u.RawQuery = q.Encode()
	conn, err := filesclient.Dial(ctx, f.cfg, u, method)
	var se *fileswire.StatusError
	if errors.As(err, &se) && (se.Status.Code == http.StatusServiceUnavailable || se.Status.Code == http.StatusNotFound && se.Status.Reason == metav1.StatusReasonNotFound && !strings.HasPrefix(se.Status.Message, "/")) {
		return nil, errNotImplemented
	}
	return conn, err
}

func (f *filesURL) upload(ctx context.Context, local, p string) error {
	file, err := os.Open(local)
	if err != nil {
		return err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return err
	}
	conn, err := f.dial(ctx, http.MethodPut, url.Values{"path": {p}, "length": {strconv.FormatInt(st.Size(), 10)}})
	if err != nil {
		return err
	}
	defer conn.Close()
	return filesclient.Send(conn, file)
}

func (f *filesURL) download(ctx context.Context, p, local string) error {
	conn, err := f.dial(ctx, http.MethodGet, url.Values{"path": {p}})
	if err != nil {
		return err
	}
	defer conn.Close()
	file, err := os.Create(local)
	if err != nil {
		return err
	}
	if err := filesclient.Outcome(conn, file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// randomFile writes size random bytes to path and returns the path and their sha256.
func randomFile(path string, size int64) (string, string, error) {
	file, err := os.Create(path)
	if err != nil {
		return "", "", err
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(file, h), rand.Reader, size); err != nil {
		file.Close()
		return "", "", err
	}
	return path, hex.EncodeToString(h.Sum(nil)), file.Close()
}

func sha256File(path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
