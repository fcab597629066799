package checkpointregistry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/testutil/memregistry"
)

// serve starts an in-memory registry on 127.0.0.1, wrapped by wrap (nil: none), and names a repository in it.
func serve(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h := memregistry.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv, err := memregistry.Serve(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv.Repo()
}

func open(t *testing.T, repository string, o Options) *Registry {
	t.Helper()
	o.PlainHTTP = true
	r, err := New(repository, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// archiveOf is an archive of the bytes b, with an opener of them.
func archiveOf(b []byte) (archive.Archive, Opener) {
	h := sha256.Sum256(b)
	return archive.Archive{Digest: "sha256:" + hex.EncodeToString(h[:]), Size: int64(len(b))},
		func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

func push(t *testing.T, r *Registry, uid string, b []byte) archive.Archive {
	t.Helper()
	a, opener := archiveOf(b)
	if err := r.Push(context.Background(), uid, a, opener); err != nil {
		t.Fatalf("push %s: %v", uid, err)
	}
	return a
}

func TestPushThenPullByDigestGivesTheSameBytes(t *testing.T) {
	r := open(t, serve(t, nil), Options{})
	body := bytes.Repeat([]byte("workspace bytes "), 4096)
	a := push(t, r, "uid-1", body)
	var got bytes.Buffer
	if err := r.Pull(context.Background(), "uid-1", a, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), body) {
		t.Fatalf("pulled %d bytes that differ from the %d pushed", got.Len(), len(body))
	}
}

func TestPullOfACheckpointNeverPushedIsMissing(t *testing.T) {
	r := open(t, serve(t, nil), Options{})
	a, _ := archiveOf([]byte("x"))
	if err := r.Pull(context.Background(), "uid-none", a, io.Discard); !errors.Is(err, archive.ErrMissing) {
		t.Fatalf("pull = %v, want ErrMissing", err)
	}
}

func TestPullOfOtherBytesThanTheManifestNamesIsCorrupt(t *testing.T) {
	r := open(t, serve(t, nil), Options{})
	push(t, r, "uid-1", []byte("first"))
	other, _ := archiveOf([]byte("second"))
	if err := r.Pull(context.Background(), "uid-1", other, io.Discard); !errors.Is(err, archive.ErrCorrupt) {
		t.Fatalf("pull = %v, want ErrCorrupt", err)
	}
}

// A registry that alters a blob on its way out is caught by the digest.
func TestPullOfAlteredBytesIsCorrupt(t *testing.T) {
	tamper := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/blobs/") {
				next.ServeHTTP(w, req)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, req)
			b := rec.Body.Bytes()
			if len(b) > 0 {
				b[0] ^= 0xff
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(b) // a client that went away fails on its own side
		})
	}
	r := open(t, serve(t, tamper), Options{})
	a := push(t, r, "uid-1", []byte("the workspace"))
	var got bytes.Buffer
	if err := r.Pull(context.Background(), "uid-1", a, &got); !errors.Is(err, archive.ErrCorrupt) {
		t.Fatalf("pull = %v, want ErrCorrupt", err)
	}
}

func TestPullWithTheBlobGoneIsMissing(t *testing.T) {
	r := open(t, serve(t, nil), Options{})
	a := push(t, r, "uid-1", []byte("the workspace"))
	if err := r.deleteBlob(context.Background(), r.repo.Digest(a.Digest)); err != nil {
		t.Fatal(err)
	}
	if err := r.Pull(context.Background(), "uid-1", a, io.Discard); !errors.Is(err, archive.ErrMissing) {
		t.Fatalf("pull = %v, want ErrMissing", err)
	}
}

// Two Checkpoints of the same bytes share the blob: deleting the first leaves the second whole, deleting
// the second removes the blob.
func TestDeleteKeepsABlobAnotherCheckpointNames(t *testing.T) {
	ctx := context.Background()
	r := open(t, serve(t, nil), Options{})
	body := []byte("shared workspace")
	a := push(t, r, "uid-1", body)
	push(t, r, "uid-2", body)

	if err := r.Delete(ctx, "uid-1"); err != nil {
		t.Fatal(err)
	}
	if err := r.Pull(ctx, "uid-1", a, io.Discard); !errors.Is(err, archive.ErrMissing) {
		t.Fatalf("pull of the deleted Checkpoint = %v, want ErrMissing", err)
	}
	var got bytes.Buffer
	if err := r.Pull(ctx, "uid-2", a, &got); err != nil || !bytes.Equal(got.Bytes(), body) {
		t.Fatalf("pull of the Checkpoint left = %v (%q)", err, got.String())
	}
	if !blobThere(t, r, a) {
		t.Fatal("the blob went while a Checkpoint still names it")
	}

	if err := r.Delete(ctx, "uid-2"); err != nil {
		t.Fatal(err)
	}
	if blobThere(t, r, a) {
		t.Fatal("the blob stayed after the last Checkpoint naming it was deleted")
	}
	if err := r.Delete(ctx, "uid-2"); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
}

func blobThere(t *testing.T, r *Registry, a archive.Archive) bool {
	t.Helper()
	resp, err := http.Head("http://" + r.repo.RegistryStr() + "/v2/" + r.repo.RepositoryStr() + "/blobs/" + a.Digest)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func TestARegistryThatWantsCredentialsGetsThemFromTheDockerConfig(t *testing.T) {
	basic := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if u, p, ok := req.BasicAuth(); !ok || u != "agent" || p != "s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, req)
		})
	}
	repository := serve(t, basic)
	a, opener := archiveOf([]byte("the workspace"))
	if err := open(t, repository, Options{}).Push(context.Background(), "uid-1", a, opener); err == nil {
		t.Fatal("an anonymous push was let in")
	}
	host, _, _ := strings.Cut(repository, "/")
	cfg := `{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("agent:s3cret")) + `"}}}`
	auth, err := AuthFromDockerConfig([]byte(cfg), repository)
	if err != nil {
		t.Fatal(err)
	}
	r := open(t, repository, Options{Auth: auth})
	if err := r.Push(context.Background(), "uid-1", a, opener); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := r.Pull(context.Background(), "uid-1", a, &got); err != nil || got.String() != "the workspace" {
		t.Fatalf("pull = %v (%q)", err, got.String())
	}
	if err := r.Delete(context.Background(), "uid-1"); err != nil {
		t.Fatal(err)
	}
}

func TestADockerConfigWithoutTheRegistryIsRefused(t *testing.T) {
	if _, err := AuthFromDockerConfig([]byte(`{"auths":{"other.example:5000":{"username":"u","password":"p"}}}`), "127.0.0.1:5000/ckpt"); err == nil {
		t.Fatal("credentials of another registry were taken")
	}
}

func TestPlainHTTPOnlyToLoopback(t *testing.T) {
	for repository, ok := range map[string]bool{
		"127.0.0.1:5000/ckpt":        true,
		"127.1.2.3:5000/ckpt":        true,
		"registry.example:5000/ckpt": false,
		"10.0.0.1:5000/ckpt":         false,
		"localhost:5000/ckpt":        false,
	} {
		if _, err := New(repository, Options{PlainHTTP: true}); (err == nil) != ok {
			t.Errorf("New(%s, plain HTTP) = %v, want allowed %v", repository, err, ok)
		}
	}
}
