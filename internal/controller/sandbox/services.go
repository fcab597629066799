package sandbox

import (
	"context"
	"errors"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// ensureServices starts the services in declaration order, each only once the one before it is ready. A
// service that stopped, vanished or failed readiness poisons the topology; none is ever restarted.
func (r *Reconciler) ensureServices(ctx context.Context, s *scope) (bool, error) {
	syncServiceStatuses(s.sbx)
	for i, svc := range s.services {
		if stop, err := r.ensureService(ctx, s, svc, &s.sbx.Status.Services[i]); stop || err != nil {
			return stop, err
		}
	}
	return false, nil
}

func (r *Reconciler) ensureService(ctx context.Context, s *scope, svc *dsv1alpha1.SandboxService, st *dsv1alpha1.ServiceInstanceStatus) (stop bool, err error) {
	ctx, span := tracing.Start(ctx, "sandbox.service", tracing.Service(svc.Name))
	defer func() { tracing.End(span, err, "") }()
	c := s.containers[s.serviceName(svc.Name)]
	switch {
	case topology.Ended(c):
		st.State, st.Message = dsv1alpha1.ServiceFailed, "its container stopped"
		return r.poison(ctx, s, dsv1alpha1.ReasonServiceExited, "service %q stopped with exit code %d", svc.Name, c.ExitCode)
	case !c.Exists && st.ContainerID != "":
		st.State, st.Message = dsv1alpha1.ServiceFailed, "its container was removed"
		return r.poison(ctx, s, dsv1alpha1.ReasonServiceExited, "service %q's container was removed", svc.Name)
	case !c.Exists:
		info, stop, err := r.create(ctx, s, r.serviceSpec(s, svc), svc.Spec.Env, dsv1alpha1.ReasonServiceStartFailed, "service "+svc.Name)
		if stop || err != nil {
			return stop, err
		}
		c = info
	}
	span.SetAttributes(tracing.ContainerID(c.ID))
	if st.ContainerID != c.ID { // made (or adopted after a lost status write) by this pass: built from svc as it is now
		st.ServiceGeneration = svc.Generation
	}
	st.ContainerID = c.ID
	if c.State == dd.StateCreated {
		if err := r.Driver.StartContainer(ctx, c.Name); err != nil {
			return s.fail(dsv1alpha1.ReasonServiceStartFailed, "starting service "+svc.Name, err)
		}
		c.State, c.StartedAt = dd.StateRunning, time.Now()
		st.State, st.Message = dsv1alpha1.ServiceStarting, ""
		r.event(s.sbx, false, EventServiceStarted, "Start", "service %s started", svc.Name)
	}
	if st.State == dsv1alpha1.ServicePending {
		st.State = dsv1alpha1.ServiceStarting // started by a pass whose status write was lost
	}
	s.containers[c.Name] = c
	if st.State == dsv1alpha1.ServiceReady {
		return r.checkLiveness(ctx, s, svc, c, st)
	}
	return r.checkReadiness(ctx, s, svc, c, st)
}

// syncServiceStatuses keeps one status entry per service named in the spec, in spec order.
func syncServiceStatuses(sbx *dsv1alpha1.Sandbox) {
	have := map[string]dsv1alpha1.ServiceInstanceStatus{}
	for _, st := range sbx.Status.Services {
		have[st.Name] = st
	}
	out := make([]dsv1alpha1.ServiceInstanceStatus, 0, len(sbx.Spec.Services))
	for _, name := range sbx.Spec.Services {
		st, ok := have[name]
		if !ok {
			st = dsv1alpha1.ServiceInstanceStatus{Name: name, State: dsv1alpha1.ServicePending}
		}
		out = append(out, st)
	}
	sbx.Status.Services = out
}

// create makes a container the spec asks for, once the Secrets its env needs exist (its image was seen to
// by ensureImages); env is added to the defaults spec.Env holds, replacing those of the same name. A
// missing Secret is waited for (Secrets are not watched, so it is looked for again later); an image
// refused by the driver is terminal.
func (r *Reconciler) create(ctx context.Context, s *scope, spec dd.ContainerSpec, env []dsv1alpha1.EnvVar, reason, what string) (dd.ContainerInfo, bool, error) {
	vars, err := r.resolveEnv(ctx, s.sbx.Namespace, env)
	var missing *missingSecretError
	if errors.As(err, &missing) {
		s.note(factAwaiting, dsv1alpha1.ReasonSecretNotFound, "the env of %s needs %v", what, missing)
		s.after(r.Options.SpecRetry)
		return dd.ContainerInfo{}, true, nil
	}
	if err != nil {
		stop, err := s.fail(reason, "reading the Secrets of "+what, err)
		return dd.ContainerInfo{}, stop, err
	}
	spec.Env = withEnv(spec.Env, vars)
	info, err := r.Driver.EnsureContainer(ctx, spec)
	switch {
	case err == nil:
		return info, false, nil
	case dd.PhaseOf(err) == dd.PhaseImage && dd.IsNotFound(err):
		// Removed from the node since ensureImages saw it: the next pass sees to it again.
		s.note(factBuilding, dsv1alpha1.ReasonImageNotPresent, "the image of %s is no longer on node %s; looking again", what, r.Options.Node)
		s.after(status.StaleRetry)
		return dd.ContainerInfo{}, true, nil
	case dd.PhaseOf(err) == dd.PhaseImage:
		reason = dsv1alpha1.ReasonImageFailed
	}
	stop, err := s.fail(reason, "creating "+what, err)
	return dd.ContainerInfo{}, stop, err
}
