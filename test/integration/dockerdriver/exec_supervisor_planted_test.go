//go:build integration

package dockerdriver_test

import (
	"context"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/volume"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/supervision"
)

// A command runs as the container's user, not root: it must not be able to put a supervisor of its own, or a
// run's result, where the agent will take them for its own.
var _ = Describe("A supervisor planted by the command's user", func() {
	const key = "run-planted"
	supervisor := dd.RunMountPath + "/supervise.v" + supervision.Version
	// plant writes, as the container's user, a supervisor that reports success with no output, and a
	// result for the next run; it reports what the shell said of it.
	plant := func(ctx context.Context, name string) dd.ExecResult {
		return sh(ctx, name, "printf '#!/bin/sh\\nexit 0\\n' > "+supervisor+"; chmod 755 "+supervisor+"; "+
			"mkdir -p "+dd.RunMountPath+"/runs/"+key+" && echo fake > "+dd.RunMountPath+"/runs/"+key+"/stdout; id -u", 30*time.Second)
	}
	runReal := func(ctx context.Context, name string) dd.ExecResult {
		res, err := driver.Exec(ctx, name, dd.ExecRequest{
			Command: []string{"sh", "-c", "echo real; exit 3"}, Timeout: 30 * time.Second, OutputLimit: 256 << 10,
			Supervised: &dd.Supervision{Image: holderImage, Key: key, Created: func(dd.ExecRef) error { return nil }},
		})
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	// primary starts a primary of a fresh owner with runVolume made for it by makeVolume.
	primary := func(ctx context.Context, makeVolume func(dd.Owner) string) string {
		o := newOwner("planted")
		perSandbox := o
		perSandbox.Generation = 0
		target := spec(o, dsv1alpha1.RolePrimary, "")
		target.Mounts = []dd.VolumeMount{{Volume: makeVolume(perSandbox), Target: dd.RunMountPath}}
		Expect(run(ctx, target).RunVolume).NotTo(BeEmpty())
		return target.Name
	}

	It("cannot write the run volume's root, so the first Execution runs the real supervisor", func(ctx SpecContext) {
		name := primary(ctx, func(o dd.Owner) string {
			v, err := driver.EnsureVolume(ctx, dd.VolumeSpec{Name: dd.Name(o, dsv1alpha1.RoleRun, ""), Owner: o, Role: dsv1alpha1.RoleRun, SizeBytes: 4 << 20})
			Expect(err).NotTo(HaveOccurred())
			return v.Name
		})
		planted := plant(ctx, name)
		Expect(string(planted.Stdout)).NotTo(Equal("0\n"), "the container's user is not root")
		Expect(string(planted.Stderr)).To(ContainSubstring("ermission denied"))
		res := runReal(ctx, name)
		Expect(res.ExitCode).To(Equal(3))
		Expect(string(res.Stdout)).To(Equal("real\n"))
		root := sh(ctx, name, "stat -c '%a %u' "+dd.RunMountPath+" "+supervisor+" "+dd.RunMountPath+"/runs", 30*time.Second)
		Expect(string(root.Stdout)).To(Equal("755 0\n555 0\n1777 0\n"))
	})

	It("is replaced in a run volume made before its root was root's alone", func(ctx SpecContext) {
		name := primary(ctx, func(o dd.Owner) string {
			// The options such a volume was made with: its root writable by every user.
			v, err := docker.VolumeCreate(ctx, volume.CreateOptions{
				Name: dd.Name(o, dsv1alpha1.RoleRun, ""), Driver: "local", Labels: dd.Labels(node, o, dsv1alpha1.RoleRun, ""),
				DriverOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=" + strconv.Itoa(4<<20) + ",mode=1777,nosuid,nodev"},
			})
			Expect(err).NotTo(HaveOccurred())
			return v.Name
		})
		planted := plant(ctx, name)
		Expect(planted.ExitCode).To(Equal(0), string(planted.Stderr))
		Expect(string(planted.Stdout)).NotTo(Equal("0\n"), "the container's user is not root")
		res := runReal(ctx, name)
		Expect(res.ExitCode).To(Equal(3))
		Expect(string(res.Stdout)).To(Equal("real\n"))
	})
})
