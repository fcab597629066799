// Package envtestenv starts the control plane the envtest suites run against: etcd and kube-apiserver from
// $KUBEBUILDER_ASSETS, started by internal/localcluster as `make run` and the end-to-end tests start them,
// with Dockside's CRDs installed, and a client of it that knows Dockside's types.
package envtestenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/localcluster"
)

// NewScheme knows Kubernetes' own types and Dockside's.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("adding Kubernetes' types to a scheme: %w", err)
	}
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("adding Dockside's types to a scheme: %w", err)
	}
	return scheme, nil
}

// Env is a running control plane (Stop ends it) and a client of its admin.
type Env struct {
	*localcluster.ControlPlane
	Scheme *runtime.Scheme
	Client client.Client
}

// Start starts etcd and kube-apiserver as opts say, with Dockside's CRDs (config/crd/bases) installed when
// opts name no other CRDs.
func Start(opts localcluster.Options) (*Env, error) {
	if opts.CRDDir == "" {
		root, err := repoRoot()
		if err != nil {
			return nil, err
		}
		opts.CRDDir = filepath.Join(root, "config", "crd", "bases")
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	cp, err := localcluster.Start(opts)
	if err != nil {
		return nil, fmt.Errorf("starting the envtest control plane: %w", err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("a client of the envtest control plane: %w", err), cp.Stop())
	}
	return &Env{ControlPlane: cp, Scheme: scheme, Client: c}, nil
}

// repoRoot is the folder of go.mod at or above the working directory, which `go test` sets to the folder of
// the package under test.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("finding the repository: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
