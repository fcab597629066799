package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// replay is what Docker's own API does to make a Sandbox's containers without Dockside: the same creates and
// starts the agent made, with the configurations it sent, read back from Docker, over one client connection as
// the agent's driver talks to Docker. Each container is made with its volumes (created first, with the
// driver and options of the Sandbox's own) and started; what a Sandbox needs beyond Docker (its API object,
// the agent's observations and checks, its status) is what a comparison with it measures.
type replay struct {
	cli  *client.Client
	node string // the baselines' node label (plainNode)
	// containers are the Sandbox's containers to make, in the order the agent made them.
	containers []replayed
}

// replayed is one container of a replay: its configuration, and the volumes it mounts, as Docker reported them.
type replayed struct {
	config  container.Config
	host    container.HostConfig
	volumes map[string]volume.Volume // by the name its mounts use
}

// dockerAPI is a client of this machine's Docker daemon, as the agent's driver makes one.
func dockerAPI() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("making a Docker client: %w", err)
	}
	return cli, nil
}

// newReplay reads back the containers of the given roles that the agent of node made for the Sandbox ns/name,
// in that order, with the volumes they mount.
func newReplay(ctx context.Context, cli *client.Client, node, ns, name string, roles ...string) (*replay, error) {
	r := &replay{cli: cli, node: plainNode(node)}
	for _, role := range roles {
		list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
			filters.Arg("label", dsv1alpha1.LabelNode+"="+node), filters.Arg("label", dsv1alpha1.LabelNamespace+"="+ns),
			filters.Arg("label", dsv1alpha1.LabelName+"="+name), filters.Arg("label", dsv1alpha1.LabelRole+"="+role))})
		if err != nil {
			return nil, fmt.Errorf("listing the %s of %s/%s: %w", role, ns, name, err)
		}
		if len(list) != 1 {
			return nil, fmt.Errorf("%d containers of role %s for %s/%s, want one", len(list), role, ns, name)
		}
		c, err := cli.ContainerInspect(ctx, list[0].ID)
		if err != nil {
			return nil, fmt.Errorf("inspecting the %s of %s/%s: %w", role, ns, name, err)
		}
		rc := replayed{config: *c.Config, host: *c.HostConfig, volumes: map[string]volume.Volume{}}
		for _, m := range c.HostConfig.Mounts {
			if m.Type != mount.TypeVolume {
				continue
			}
			v, err := cli.VolumeInspect(ctx, m.Source)
			if err != nil {
				return nil, fmt.Errorf("inspecting volume %s: %w", m.Source, err)
			}
			rc.volumes[m.Source] = v
		}
		r.containers = append(r.containers, rc)
	}
	return r, nil
}

// run makes the i-th copy of the Sandbox's containers, each container's volumes first, and starts each; it
// returns when the last start returned (the container is running then). Everything carries the baselines'
// labels; volumes the containers share are made once.
func (r *replay) run(ctx context.Context, i int) error {
	made := map[string]string{} // the Sandbox's volume names to the copy's
	for k, rc := range r.containers {
		host := rc.host
		host.Mounts = slices.Clone(rc.host.Mounts)
		for j, m := range host.Mounts {
			v, ok := rc.volumes[m.Source]
			if !ok {
				continue
			}
			if _, ok := made[m.Source]; !ok {
				made[m.Source] = fmt.Sprintf("%s-v%d-%d", r.node, i, len(made))
				if _, err := r.cli.VolumeCreate(ctx, volume.CreateOptions{Name: made[m.Source], Driver: v.Driver, DriverOpts: v.Options, Labels: r.labels("")}); err != nil {
					return fmt.Errorf("creating volume %s: %w", made[m.Source], err)
				}
			}
			host.Mounts[j].Source = made[m.Source]
		}
		cfg := rc.config
		cfg.Labels = r.labels(rc.config.Labels[dsv1alpha1.LabelRole])
		name := fmt.Sprintf("%s-c%d-%d", r.node, i, k)
		created, err := r.cli.ContainerCreate(ctx, &cfg, &host, nil, nil, name)
		if err != nil {
			return fmt.Errorf("creating container %s: %w", name, err)
		}
		if err := r.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
			return fmt.Errorf("starting container %s: %w", name, err)
		}
	}
	return nil
}

// labels are the baselines' labels (baselineLabels), so that cleanup finds what a replay made, and on a
// container the role of the Sandbox's container it copies (labelReplayOf).
func (r *replay) labels(role string) map[string]string {
	l := map[string]string{dsv1alpha1.LabelManaged: "true", dsv1alpha1.LabelNode: r.node, dsv1alpha1.LabelRole: roleBaseline}
	if role != "" {
		l[labelReplayOf] = role
	}
	return l
}

// waitRunningByLabels waits until Docker reports a running container of the Sandbox ns/name of node in the
// given role, or ctx ends: the holder a session's pass starts after its Ready, which a baseline timed next
// should not share Docker with.
func waitRunningByLabels(ctx context.Context, cli *client.Client, node, ns, name, role string) error {
	args := filters.NewArgs(filters.Arg("label", dsv1alpha1.LabelNode+"="+node), filters.Arg("label", dsv1alpha1.LabelNamespace+"="+ns),
		filters.Arg("label", dsv1alpha1.LabelName+"="+name), filters.Arg("label", dsv1alpha1.LabelRole+"="+role),
		filters.Arg("status", "running"))
	for {
		list, err := cli.ContainerList(ctx, container.ListOptions{Filters: args})
		if err != nil {
			return fmt.Errorf("listing the %s of %s/%s: %w", role, ns, name, err)
		}
		if len(list) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no running %s of %s/%s: %w", role, ns, name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitAllRunning waits until node has want running containers labelled with namespace ns, or ctx ends.
func waitAllRunning(ctx context.Context, cli *client.Client, node, ns string, want int) error {
	args := filters.NewArgs(filters.Arg("label", dsv1alpha1.LabelNode+"="+node), filters.Arg("status", "running"))
	if ns != "" {
		args.Add("label", dsv1alpha1.LabelNamespace+"="+ns)
	}
	for {
		list, err := cli.ContainerList(ctx, container.ListOptions{Filters: args})
		if err != nil {
			return fmt.Errorf("listing the running containers of %s: %w", node, err)
		}
		if len(list) >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("%d of %d containers of %s running", len(list), want, node), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
