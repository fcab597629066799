// Package localcluster starts and stops a local Kubernetes control plane (etcd and kube-apiserver on loopback,
// built from source by hack/build-controlplane.sh) with Dockside's CRDs installed. `make run` and the end-to-end
// tests both use it, so what a person runs by hand is what the tests exercise.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsEnv names the folder holding kube-apiserver, etcd and kubectl; envtest reads the same variable.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Options say where the control plane finds its binaries and CRDs and where it keeps its state.
type Options struct {
	AssetsDir      string // folder with kube-apiserver, etcd and kubectl; defaults to $KUBEBUILDER_ASSETS
	CRDDir         string // folder of CRD manifests to install; empty installs none
	DataDir        string // etcd's data folder, kept across restarts; empty means a temporary one
	KubeconfigPath string // where to write an admin kubeconfig; empty means none is written
	// Dataplane, when set, starts kube-apiserver as the front proxy of the agents' aggregated API and
	// registers its APIService (dataplane.go).
	Dataplane *Dataplane
	// RequestTimeout, when set, is kube-apiserver's --request-timeout (its default is 60 s); tests shorten
	// it to show what outlives it.
	RequestTimeout time.Duration
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	Config      *rest.Config // admin access
	Kubeconfig  string       // path of the admin kubeconfig, when one was written
	KubectlPath string       // kubectl built with the control plane
	env         *envtest.Environment
}

// Start brings etcd and kube-apiserver up, installs the CRDs and writes the kubeconfig.
func Start(opts Options) (*ControlPlane, error) {
	assets, err := assetsDir(opts.AssetsDir)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ErrorIfCRDPathMissing: true}
	if opts.CRDDir != "" {
		env.CRDDirectoryPaths = []string{opts.CRDDir}
	}
	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("control plane data folder: %w", err)
		}
		env.ControlPlane.Etcd = &envtest.Etcd{DataDir: opts.DataDir}
	}
	if opts.RequestTimeout > 0 {
		env.ControlPlane.GetAPIServer().Configure().Set("request-timeout", opts.RequestTimeout.String())
	}
	var caBundle []byte
	if opts.Dataplane != nil {
		if caBundle, err = opts.Dataplane.configure(env); err != nil {
			return nil, err
		}
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", assets, err)
	}
	cp := &ControlPlane{Config: cfg, KubectlPath: filepath.Join(assets, "kubectl"), env: env}
	if opts.Dataplane != nil {
		if err := cp.registerDataplane(*opts.Dataplane, caBundle); err != nil {
			return nil, errors.Join(err, cp.Stop())
		}
	}
	if opts.KubeconfigPath != "" {
		if err := cp.writeKubeconfig(opts.KubeconfigPath); err != nil {
			return nil, errors.Join(err, cp.Stop())
		}
	}
	return cp, nil
}

// registerDataplane registers the data plane's APIService and its Service.
func (c *ControlPlane) registerDataplane(d Dataplane, caBundle []byte) error {
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		return fmt.Errorf("a client of the control plane: %w", err)
	}
	return d.register(context.Background(), cl, caBundle)
}

// AddUser makes a user the API server authenticates (by a client certificate) and returns its config.
func (c *ControlPlane) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := c.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return u.Config(), nil
}

// Stop ends kube-apiserver and etcd and waits for them to exit.
func (c *ControlPlane) Stop() error {
	if err := c.env.Stop(); err != nil {
		return fmt.Errorf("stopping etcd and kube-apiserver: %w", err)
	}
	return nil
}

// writeKubeconfig writes credentials of a cluster-admin user, so that kubectl and the agent act with full rights.
func (c *ControlPlane) writeKubeconfig(path string) error {
	user, err := c.env.AddUser(envtest.User{Name: "dockside-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("creating the admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	c.Kubeconfig = path
	return nil
}

// assetsDir finds the control plane binaries and says how to get them when they are missing.
func assetsDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(AssetsEnv)
	}
	if dir == "" {
		return "", fmt.Errorf("%s is not set: run through make, or set it to the folder printed by hack/build-controlplane.sh", AssetsEnv)
	}
	for _, name := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run hack/build-controlplane.sh", name, dir)
		}
	}
	return dir, nil
}
