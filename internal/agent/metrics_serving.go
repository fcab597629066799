package agent

import (
	"fmt"
	"net"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// checkMetricsServing refuses plain HTTP metrics on an address other hosts can reach: there anyone who reaches
// the port would read them unauthenticated. "0" (no endpoint) needs no check.
func checkMetricsServing(o *Options) error {
	if !o.MetricsPlainHTTP || o.MetricsBindAddress == "0" {
		return nil
	}
	host, _, err := net.SplitHostPort(o.MetricsBindAddress)
	if err != nil {
		return fmt.Errorf("metrics bind address %q is not host:port: %w", o.MetricsBindAddress, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("plain HTTP metrics are served only on a loopback address such as 127.0.0.1:8080, not on %q "+
			"(where anyone who reaches it reads them): serve them over HTTPS (--metrics-secure, the default), which the "+
			"API server authenticates and authorizes", o.MetricsBindAddress)
	}
	return nil
}

// metricsServing is how the manager serves /metrics. By default over HTTPS, each request's bearer token checked
// with a TokenReview and its right to GET /metrics with a SubjectAccessReview (the ClusterRole
// dockside-metrics-reader grants it; config/rbac), as kubebuilder's scaffold does. The certificate is
// tls.crt/tls.key (or the names given) in MetricsCertDir, reloaded when they change, or else a self-signed one
// made at start. Plain HTTP, without any check, only on loopback (checkMetricsServing).
func metricsServing(o Options) metricsserver.Options {
	if o.MetricsPlainHTTP {
		return metricsserver.Options{BindAddress: o.MetricsBindAddress}
	}
	return metricsserver.Options{
		BindAddress:    o.MetricsBindAddress,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
		CertDir:        o.MetricsCertDir,
		CertName:       o.MetricsCertName,
		KeyName:        o.MetricsKeyName,
	}
}
