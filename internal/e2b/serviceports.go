package e2b

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// serviceOf is the SandboxService whose container serves port of sbx, "" for the primary (docs/e2b.md,
// "Ports of a sandbox"): E2B's host <port>-<sandboxID> names no container, so a port one of the Sandbox's
// services declares (spec.ports) is that service's, the first in spec.services when several declare it, and
// any other port is the primary's. The services are read with the caller's key, once per sandboxTTL; a
// SandboxService gone is skipped (the Sandbox reports it), a refusal of the read is the caller's answer.
func (p *portPool) serviceOf(ctx context.Context, c *caller, sbx *dsv1alpha1.Sandbox, port int) (string, error) {
	if len(sbx.Spec.Services) == 0 {
		return "", nil
	}
	k := sandboxRead{sha256.Sum256([]byte(c.token)), c.namespace, sbx.Name}
	now := p.now()
	p.mu.Lock()
	e, ok := p.services[k]
	if ok && (now.Sub(e.read) >= sandboxTTL || !slices.Equal(e.names, sbx.Spec.Services)) {
		ok = false
	}
	for sk, se := range p.services {
		if now.Sub(se.read) >= sandboxTTL {
			delete(p.services, sk)
		}
	}
	p.mu.Unlock()
	if !ok {
		ports := map[int]string{}
		for _, name := range sbx.Spec.Services {
			var svc dsv1alpha1.SandboxService
			err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, &svc)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return "", fromAPI(err, fmt.Sprintf("reading SandboxService %q of sandbox %q for its ports", name, sbx.Name))
			}
			for _, sp := range svc.Spec.Ports {
				if _, taken := ports[int(sp.Port)]; !taken && (sp.Protocol == "" || sp.Protocol == "TCP") {
					ports[int(sp.Port)] = name
				}
			}
		}
		e = readServices{names: slices.Clone(sbx.Spec.Services), ports: ports, read: now}
		p.mu.Lock()
		p.services[k] = e
		p.mu.Unlock()
	}
	return e.ports[port], nil
}

// readServices is what serviceOf read of a Sandbox's services: which declares each port.
type readServices struct {
	names []string // the Sandbox's spec.services when read
	ports map[int]string
	read  time.Time
}
