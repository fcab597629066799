package e2b

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dockside-dev/dockside/internal/dataplane/unavailable"
)

// callerTTL is how long a caller's clients are kept: a revoked token stops working at the API server at once,
// whatever is cached here, since every call carries the token.
const callerTTL = time.Minute

// caller is one key's way into the cluster: clients that send that key as their bearer token, and the
// namespace its identity lives in.
type caller struct {
	token     string
	user      string
	namespace string
	config    *rest.Config
	client    client.Client
	http      *http.Client
}

// identities resolves keys to callers. base says where the API server is and how to trust it; it carries no
// credential, so that the gateway can do nothing a caller's own token cannot.
type identities struct {
	base             *rest.Config
	scheme           *runtime.Scheme
	defaultNamespace string

	mu    sync.Mutex
	cache map[[32]byte]cachedCaller
}

type cachedCaller struct {
	c       *caller
	expires time.Time
}

func newIdentities(base *rest.Config, scheme *runtime.Scheme, defaultNamespace string) *identities {
	anon := rest.AnonymousClientConfig(base)
	return &identities{base: anon, scheme: scheme, defaultNamespace: defaultNamespace, cache: map[[32]byte]cachedCaller{}}
}

// keyOf is the caller's key: X-API-Key (the control plane), X-Access-Token (envd, as the SDK sends the
// envdAccessToken), or a bearer token.
func keyOf(r *http.Request) string {
	for _, h := range []string{"X-API-Key", "X-Access-Token"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return v
	}
	return ""
}

// resolve returns the caller of token, asking the API server who it is (SelfSubjectReview) once per callerTTL.
func (ids *identities) resolve(ctx context.Context, token string) (*caller, error) {
	if token == "" {
		return nil, errorf(http.StatusUnauthorized, "missing key: send a Kubernetes token as X-API-Key (docs/e2b.md)")
	}
	sum := sha256.Sum256([]byte(token))
	now := time.Now()
	ids.mu.Lock()
	if e, ok := ids.cache[sum]; ok && now.Before(e.expires) {
		ids.mu.Unlock()
		return e.c, nil
	}
	for k, e := range ids.cache {
		if !now.Before(e.expires) {
			delete(ids.cache, k)
		}
	}
	ids.mu.Unlock()
	c, err := ids.build(ctx, token)
	if err != nil {
		return nil, err
	}
	ids.mu.Lock()
	ids.cache[sum] = cachedCaller{c: c, expires: now.Add(callerTTL)}
	ids.mu.Unlock()
	return c, nil
}

func (ids *identities) build(ctx context.Context, token string) (*caller, error) {
	cfg := rest.CopyConfig(ids.base)
	cfg.BearerToken = token
	// A data plane call the aggregator answered unavailable reached no agent: it is sent again
	// (docs/e2b.md, "When the data plane answers").
	cfg.Wrap(unavailable.Retrying)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("making the API client: %w", err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("making the API client: %w", err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case apierrors.IsUnauthorized(err):
		return nil, errorf(http.StatusUnauthorized, "the key is not a valid Kubernetes token")
	case err != nil:
		return nil, fromAPI(err, "checking the key")
	}
	user := review.Status.UserInfo.Username
	ns := namespaceOf(user, ids.defaultNamespace)
	if ns == "" {
		return nil, errorf(http.StatusUnauthorized, "the key's identity %q is not a ServiceAccount and the gateway has no --namespace default", user)
	}
	cl, err := client.New(cfg, client.Options{Scheme: ids.scheme, HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("making the API client: %w", err)
	}
	return &caller{token: token, user: user, namespace: ns, config: cfg, client: cl, http: hc}, nil
}

// namespaceOf is the namespace of a ServiceAccount's user name (system:serviceaccount:NS:NAME), else def.
func namespaceOf(user, def string) string {
	if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		if ns, _, ok := strings.Cut(rest, ":"); ok && ns != "" {
			return ns
		}
	}
	return def
}
