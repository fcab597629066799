//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// testRegistry is a private registry on 127.0.0.1 for the end-to-end specs: it serves one image, made from
// an image the node holds (`docker save`), to clients with one of its users' basic-auth credentials, over
// plain HTTP (the daemon allows that to 127.0.0.0/8 out of the box). It implements what a pull uses of the
// distribution API: the version check, manifests by tag or digest, and blobs.
type testRegistry struct {
	Addr  string
	users map[string]string // password by user

	repo, tag      string
	manifest       []byte
	manifestDigest string
	blobs          map[string][]byte // by digest

	mu        sync.Mutex
	manifests map[string]int // manifests served, by user
	server    *http.Server
}

const (
	manifestType = "application/vnd.docker.distribution.manifest.v2+json"
	configType   = "application/vnd.docker.container.image.v1+json"
	layerType    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
)

// startRegistry serves local (an image the node holds) as repo:tag to users, until the spec ends.
func startRegistry(local, repo, tag string, users map[string]string) *testRegistry {
	GinkgoHelper()
	reg := &testRegistry{users: users, repo: repo, tag: tag, blobs: map[string][]byte{}, manifests: map[string]int{}}
	Expect(reg.load(local)).To(Succeed())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	reg.Addr = l.Addr().String()
	reg.server = &http.Server{Handler: reg}
	go func() { _ = reg.server.Serve(l) }()
	DeferCleanup(func() { Expect(reg.server.Close()).To(Succeed()) })
	return reg
}

// Image is the reference the registry's image is pulled by.
func (reg *testRegistry) Image() string { return reg.Addr + "/" + reg.repo + ":" + reg.tag }

// ManifestsServed counts the manifests user was given: each pull, and each check of credentials, asks for one.
func (reg *testRegistry) ManifestsServed(user string) int {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.manifests[user]
}

// load turns `docker save` of a local image into the registry's blobs and manifest: its config as it is,
// each layer gzipped.
func (reg *testRegistry) load(local string) error {
	saved, err := exec.Command("docker", "save", local).Output()
	if err != nil {
		return fmt.Errorf("docker save %s: %w", local, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(saved))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			return err
		}
	}
	var index []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(files["manifest.json"], &index); err != nil || len(index) != 1 {
		return fmt.Errorf("docker save %s: no manifest.json of one image (%w)", local, err)
	}
	type descriptor struct {
		MediaType string `json:"mediaType"`
		Size      int    `json:"size"`
		Digest    string `json:"digest"`
	}
	manifest := struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{SchemaVersion: 2, MediaType: manifestType}
	config := files[index[0].Config]
	manifest.Config = descriptor{MediaType: configType, Size: len(config), Digest: reg.addBlob(config)}
	for _, name := range index[0].Layers {
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		if _, err := w.Write(files[name]); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		manifest.Layers = append(manifest.Layers, descriptor{MediaType: layerType, Size: gz.Len(), Digest: reg.addBlob(gz.Bytes())})
	}
	if reg.manifest, err = json.Marshal(manifest); err != nil {
		return err
	}
	reg.manifestDigest = digestOf(reg.manifest)
	return nil
}

func (reg *testRegistry) addBlob(b []byte) string {
	d := digestOf(b)
	reg.blobs[d] = b
	return d
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ServeHTTP answers the distribution API, to its users only.
func (reg *testRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, password, ok := r.BasicAuth()
	if !ok || reg.users[user] == "" || reg.users[user] != password {
		w.Header().Set("WWW-Authenticate", `Basic realm="dockside-e2e"`)
		registryError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v2/")
	switch {
	case r.URL.Path == "/v2/" || r.URL.Path == "/v2":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	case path == reg.repo+"/manifests/"+reg.tag || path == reg.repo+"/manifests/"+reg.manifestDigest:
		reg.mu.Lock()
		reg.manifests[user]++
		reg.mu.Unlock()
		w.Header().Set("Docker-Content-Digest", reg.manifestDigest)
		serveBytes(w, r, manifestType, reg.manifest)
	case strings.HasPrefix(path, reg.repo+"/blobs/") && reg.blobs[strings.TrimPrefix(path, reg.repo+"/blobs/")] != nil:
		d := strings.TrimPrefix(path, reg.repo+"/blobs/")
		w.Header().Set("Docker-Content-Digest", d)
		serveBytes(w, r, "application/octet-stream", reg.blobs[d])
	default:
		registryError(w, http.StatusNotFound, "NAME_UNKNOWN", "no such repository, manifest or blob")
	}
}

func serveBytes(w http.ResponseWriter, r *http.Request, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

func registryError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": message}}})
}
