package dataplane

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Caller is the user a request acts for, as the API server authenticated it.
type Caller struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
	// ForwardedBy is the node of the peer agent that passed the caller on; "" when the front proxy named it.
	// A peer's word is believed within the bounds of decision 0030 (peers.go, authorize.go).
	ForwardedBy string
}

// callerOf is the Caller of an authenticated user.
func callerOf(u user.Info) Caller {
	return Caller{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

// AuthConfigMap is where kube-apiserver publishes how its front proxy (the aggregator) authenticates to
// extension API servers: the CA of its client certificate, the names it may have, and the headers that carry
// the user. Reading it takes the Role extension-apiserver-authentication-reader in kube-system.
var AuthConfigMap = client.ObjectKey{Namespace: "kube-system", Name: "extension-apiserver-authentication"}

// frontProxy is what the request headers may be believed from: a client certificate that verify accepts (and,
// when allowedNames is not empty, with one of those common names) vouches for the user in the headers.
type frontProxy struct {
	verify        x509.VerifyOptions
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
	fp := &frontProxy{verify: x509.VerifyOptions{Roots: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}}
	if !fp.verify.Roots.AppendCertsFromPEM([]byte(caPEM)) {
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

// newFrontProxyAuthenticator is k8s.io/apiserver's request-header authenticator on the settings current
// returns as they are at each request (read again every authRefresh, so a rotated CA is followed).
func newFrontProxyAuthenticator(current func() *frontProxy) authenticator.Request {
	setting := func(of func(*frontProxy) []string) headerrequest.StringSliceProvider {
		return headerrequest.StringSliceProviderFunc(func() []string {
			if fp := current(); fp != nil {
				return of(fp)
			}
			return nil
		})
	}
	return headerrequest.NewDynamicVerifyOptionsSecure(
		func() (x509.VerifyOptions, bool) {
			if fp := current(); fp != nil {
				return fp.verify, true
			}
			return x509.VerifyOptions{}, false
		},
		setting(func(fp *frontProxy) []string { return fp.allowedNames }),
		setting(func(fp *frontProxy) []string { return fp.userHeaders }),
		setting(func(fp *frontProxy) []string { return fp.uidHeaders }),
		setting(func(fp *frontProxy) []string { return fp.groupHeaders }),
		setting(func(fp *frontProxy) []string { return fp.extraPrefixes }),
	)
}

// errNoProxyCert: the request did not come through the API server (or a peer agent).
var errNoProxyCert = errors.New("the request carries no client certificate of the API server's front proxy or of a Dockside agent: call through the API server")

// peerHeaders reads the caller a peer agent passes on: the same headers the aggregator uses (callerHeaders).
var peerHeaders = func() authenticator.Request {
	a, err := headerrequest.New([]string{"X-Remote-User"}, []string{"X-Remote-Uid"}, []string{"X-Remote-Group"}, []string{"X-Remote-Extra-"})
	if err != nil {
		panic(err) // fixed, valid header names
	}
	return a
}()

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

// stripCallerHeaders removes every header peerHeaders reads, so that a forwarded request carries only what
// the forwarding agent writes.
func stripCallerHeaders(h http.Header) {
	for key := range h {
		if k := strings.ToLower(key); strings.HasPrefix(k, "x-remote-") {
			h.Del(key)
		}
	}
}
