package controllers

import (
	"context"

	v1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// ensureWorkspace keeps the workspace volume held by a running holder container, first of all: a tmpfs
// volume loses its files as soon as no running container mounts it (DESIGN.md), and the holder outlives
// every topology generation.
func (r *SandboxReconciler) ensureWorkspace(ctx context.Context, s *scope) (bool, error) {
	holder := s.containers[s.holderName()]
	if alive(holder) {
		return false, nil
	}
	if !holder.Exists {
		_, err := r.Driver.EnsureVolume(ctx, dd.VolumeSpec{
			Name: s.volumeName(), Owner: s.owner(0), Role: v1.RoleWorkspace, SizeBytes: workspaceBytes(s.sbx.Spec.Workspace),
		})
		if err != nil {
			return s.fail(v1.ReasonWorkspaceFailed, "creating the workspace volume", err)
		}
		if holder, err = r.Driver.EnsureContainer(ctx, r.holderSpec(s)); err != nil {
			return s.fail(v1.ReasonWorkspaceFailed, "creating the workspace holder", err)
		}
	}
	if err := r.Driver.StartContainer(ctx, holder.Name); err != nil {
		return s.fail(v1.ReasonWorkspaceFailed, "starting the workspace holder", err)
	}
	if holder.StartedAt.IsZero() {
		r.event(s.sbx, false, EventWorkspaceCreated, "Create", "workspace volume of %s created and held", s.sbx.Spec.Workspace.Size.String())
	} else {
		r.event(s.sbx, true, EventHolderRestarted, "Start", "the workspace holder had stopped and was started again; files not held by a running container were lost")
	}
	return false, nil
}

// ensureNetwork gives a topology with services a bridge of its own (internal when the policy denies egress;
// traffic between its own containers is the point of it, so it stays on). Without services none is made:
// the primary gets no network (None) or joins the node's shared bridge, on which containers cannot reach
// each other (Isolated, Unrestricted), so that address space goes only to topologies that need it.
func (r *SandboxReconciler) ensureNetwork(ctx context.Context, s *scope) (bool, error) {
	mode := s.sbx.Spec.Network.Mode
	switch {
	case len(s.sbx.Spec.Services) == 0 && (mode == v1.NetworkNone || mode == ""):
		s.attachment = dd.NetworkAttachment{}
		return false, nil
	case len(s.sbx.Spec.Services) == 0:
		s.attachment = dd.NetworkAttachment{Name: dd.NodeNetworkName(r.Options.Node)}
		return false, nil
	}
	name := s.networkName()
	n, ok := s.networks[name]
	if !ok {
		var err error
		n, err = r.Driver.EnsureNetwork(ctx, dd.NetworkSpec{
			Name: name, Owner: s.owner(s.gen()), Internal: mode == v1.NetworkNone || mode == "", ICC: true,
		})
		if err != nil {
			return s.fail(v1.ReasonNetworkFailed, "creating the topology network", err)
		}
		s.networks[name] = n
		r.event(s.sbx, false, EventNetworkCreated, "Create", "network %s created", name)
	}
	s.sbx.Status.NetworkID = n.ID
	s.attachment = dd.NetworkAttachment{Name: name, Aliases: []string{s.sbx.Name}}
	return false, nil
}

// ensureSharedNetwork makes the node's shared bridge (inter-container traffic off) if it is not there yet.
func (r *SandboxReconciler) ensureSharedNetwork(ctx context.Context) error {
	_, err := r.Driver.EnsureNetwork(ctx, dd.NetworkSpec{Name: dd.NodeNetworkName(r.Options.Node), ICC: false})
	return err
}
