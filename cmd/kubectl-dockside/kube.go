package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/dataplane/unavailable"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// kubeFlags are the flags every verb shares with kubectl: which kubeconfig, context and namespace.
type kubeFlags struct {
	kubeconfig, context, namespace string
}

func (k *kubeFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "path of the kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&k.context, "context", "", "kubeconfig context to use")
	fs.StringVar(&k.namespace, "namespace", "", "namespace of the objects (default: the context's)")
	fs.StringVar(&k.namespace, "n", "", "shorthand for --namespace")
}

// config reads the kubeconfig as kubectl does, and says which namespace to use. Every request the config
// makes carries one W3C traceparent, TRACEPARENT's or a new trace's, so that the agent's spans of this
// command's data-plane calls are children of it (docs/tracing.md); a data plane call the API server's aggregator
// answers unavailable is sent again (unavailable.Retrying).
func (k *kubeFlags) config() (*rest.Config, string, error) {
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: k.kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{CurrentContext: k.context, Context: clientcmdapi.Context{Namespace: k.namespace}})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	parent := tracing.CallerParent(os.Getenv)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return tracing.Propagating(rt, parent) })
	cfg.Wrap(unavailable.Retrying)
	return cfg, ns, nil
}

// client is a client of Dockside's kinds, which can watch them too, and the namespace to use.
func (k *kubeFlags) client() (client.WithWatch, string, error) {
	cfg, ns, err := k.config()
	if err != nil {
		return nil, "", err
	}
	scheme := runtime.NewScheme()
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", fmt.Errorf("registering Dockside's kinds: %w", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("making the API client: %w", err)
	}
	return c, ns, nil
}

// sandbox reads the Sandbox name of the namespace the flags say, and returns it with the client.
func (k *kubeFlags) sandbox(ctx context.Context, name string) (client.Client, *dsv1alpha1.Sandbox, error) {
	c, ns, err := k.client()
	if err != nil {
		return nil, nil, err
	}
	sbx := &dsv1alpha1.Sandbox{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sbx); err != nil {
		return nil, nil, fmt.Errorf("reading Sandbox %s/%s: %w", ns, name, err)
	}
	return c, sbx, nil
}
