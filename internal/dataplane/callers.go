package dataplane

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Caller is the user a request acts for, as the API server authenticated it.
type Caller struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// AuthConfigMap is where kube-apiserver publishes how its front proxy (the aggregator) authenticates to
// extension API servers: the CA of its client certificate, the names it may have, and the headers that carry
// the user. Reading it takes the Role extension-apiserver-authentication-reader in kube-system.
var AuthConfigMap = client.ObjectKey{Namespace: "kube-system", Name: "extension-apiserver-authentication"}

// frontProxy is what the request headers may be believed from: a client certificate chained to roots (and,
// when allowedNames is not empty, with one of those common names) vouches for the user in the headers.
type frontProxy struct {
	roots         *x509.CertPool
	allowedNames  []string
	userHeaders   []string
	uidHeaders    []string
	groupHeaders  []string
	extraPrefixes []string
}

// loadFrontProxy reads the front proxy's settings from AuthConfigMap.
func loadFrontProxy(ctx context.Context, r client.Reader) (*frontProxy, error) {
	var cm corev1.ConfigMap
	if err := r.Get(ctx, AuthConfigMap, &cm); err != nil {
		return nil, fmt.Errorf("reading %s: %w", AuthConfigMap, err)
	}
	caPEM := cm.Data["requestheader-client-ca-file"]
	if caPEM == "" {
		return nil, fmt.Errorf("%s has no requestheader-client-ca-file: kube-apiserver runs without --requestheader-client-ca-file, so it cannot proxy to aggregated APIs", AuthConfigMap)
	}
	fp := &frontProxy{roots: x509.NewCertPool()}
	if !fp.roots.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, fmt.Errorf("%s: requestheader-client-ca-file holds no PEM certificate", AuthConfigMap)
	}
	for key, into := range map[string]*[]string{
		"requestheader-allowed-names":        &fp.allowedNames,
		"requestheader-username-headers":     &fp.userHeaders,
		"requestheader-uid-headers":          &fp.uidHeaders,
		"requestheader-group-headers":        &fp.groupHeaders,
		"requestheader-extra-headers-prefix": &fp.extraPrefixes,
	} {
		if v := cm.Data[key]; v != "" {
			if err := json.Unmarshal([]byte(v), into); err != nil {
				return nil, fmt.Errorf("%s: %s is not a JSON list of strings: %w", AuthConfigMap, key, err)
			}
		}
	}
	if len(fp.userHeaders) == 0 {
		return nil, fmt.Errorf("%s names no requestheader-username-headers", AuthConfigMap)
	}
	return fp, nil
}

// errNoProxyCert: the request did not come through the API server (or a peer agent).
var errNoProxyCert = errors.New("the request carries no client certificate of the API server's front proxy or of a Dockside agent: call through the API server")

// verified reports whether the request's client certificate chains to roots with the client-auth usage and,
// when names is not empty, has one of them as common name.
func verified(r *http.Request, roots *x509.CertPool, names []string) bool {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || roots == nil {
		return false
	}
	leaf := r.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return false
	}
	return len(names) == 0 || slices.Contains(names, leaf.Subject.CommonName)
}

// caller reads the user from the headers fp names.
func (fp *frontProxy) caller(h http.Header) (Caller, error) {
	c := Caller{Extra: map[string][]string{}}
	for _, name := range fp.userHeaders {
		if c.Name = h.Get(name); c.Name != "" {
			break
		}
	}
	if c.Name == "" {
		return Caller{}, fmt.Errorf("the front proxy named no user (%s)", strings.Join(fp.userHeaders, ", "))
	}
	for _, name := range fp.uidHeaders {
		if c.UID = h.Get(name); c.UID != "" {
			break
		}
	}
	for _, name := range fp.groupHeaders {
		c.Groups = append(c.Groups, h.Values(name)...)
	}
	for key, values := range h {
		for _, prefix := range fp.extraPrefixes {
			if len(key) > len(prefix) && strings.EqualFold(key[:len(prefix)], prefix) {
				extra, err := url.PathUnescape(key[len(prefix):])
				if err != nil {
					return Caller{}, fmt.Errorf("header %s: %w", key, err)
				}
				extra = strings.ToLower(extra)
				c.Extra[extra] = append(c.Extra[extra], values...)
			}
		}
	}
	return c, nil
}

// callerHeaders writes c in the standard front-proxy headers, as an agent forwarding a request does.
func callerHeaders(h http.Header, c Caller) {
	h.Set("X-Remote-User", c.Name)
	if c.UID != "" {
		h.Set("X-Remote-Uid", c.UID)
	}
	for _, g := range c.Groups {
		h.Add("X-Remote-Group", g)
	}
	for k, vs := range c.Extra {
		for _, v := range vs {
			h.Add("X-Remote-Extra-"+url.PathEscape(k), v)
		}
	}
}

// peerHeaders is how a peer agent passes the caller on: the same headers the aggregator uses.
var peerHeaders = frontProxy{
	userHeaders: []string{"X-Remote-User"}, uidHeaders: []string{"X-Remote-Uid"},
	groupHeaders: []string{"X-Remote-Group"}, extraPrefixes: []string{"X-Remote-Extra-"},
}

// stripCallerHeaders removes every header fp reads, so that a forwarded request carries only what the
// forwarding agent writes.
func stripCallerHeaders(h http.Header) {
	for key := range h {
		if k := strings.ToLower(key); strings.HasPrefix(k, "x-remote-") {
			h.Del(key)
		}
	}
}
