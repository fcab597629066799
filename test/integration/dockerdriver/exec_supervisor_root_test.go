//go:build integration

package dockerdriver_test

import (
	"context"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/volume"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/supervision"
)

// A Sandbox that runs as root owns every file of its run volume, but not its supervisor volume, which its
// primary mounts read-only: no command of it can replace the supervisor its Executions run under.
var _ = Describe("A supervisor in a supervisor volume", func() {
	const key = "run-root"
	supervisor := dd.SupervisorMountPath + "/supervise.v" + supervision.Version
	// replace tries, as root, every way to put a supervisor that reports success with no output where the
	// agent runs its own, and a result for the next run where it reads one back; then it says which user it
	// is, and stops with code 4.
	replace := "fake=/run/dockside/fake; mkdir -p $fake/" + key + "; echo fake > $fake/" + key + "/stdout; " +
		"printf '#!/bin/sh\\nexit 0\\n' > $fake/supervise; chmod 755 $fake/supervise; " +
		"cp $fake/supervise " + supervisor + "; rm -f " + supervisor + "; " +
		"mv " + dd.SupervisorMountPath + " /run/dockside/moved; rm -rf " + dd.SupervisorMountPath + "; " +
		"mount -o remount,rw " + dd.SupervisorMountPath + "; umount " + dd.SupervisorMountPath + "; " +
		"cp $fake/supervise /run/dockside/supervise.v" + supervision.Version + "; " +
		"rm -rf /run/dockside/runs && ln -s fake /run/dockside/runs; " +
		"id -u; exit 4"
	execution := func(ctx context.Context, name, script string) dd.ExecResult {
		res, err := driver.Exec(ctx, name, dd.ExecRequest{
			Command: []string{"sh", "-c", script}, Timeout: 30 * time.Second, OutputLimit: 256 << 10, KillSurvivors: true,
			Supervised: &dd.Supervision{Image: holderImage, Key: key, Created: func(dd.ExecRef) error { return nil }},
		})
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	// primary starts a root primary of a fresh owner with a run volume and the supervisor volume that
	// makeSupervisor makes, as the Sandbox controller mounts them.
	primary := func(ctx context.Context, makeSupervisor func(dd.Owner) string) (string, dd.Owner) {
		o := newOwner("root")
		perSandbox := o
		perSandbox.Generation = 0
		runVolume, err := driver.EnsureVolume(ctx, dd.VolumeSpec{Name: dd.Name(perSandbox, dsv1alpha1.RoleRun, ""), Owner: perSandbox, Role: dsv1alpha1.RoleRun, SizeBytes: 4 << 20})
		Expect(err).NotTo(HaveOccurred())
		target := spec(o, dsv1alpha1.RolePrimary, "")
		target.RunAsRoot = true
		target.Mounts = []dd.VolumeMount{
			{Volume: runVolume.Name, Target: dd.RunMountPath},
			{Volume: makeSupervisor(perSandbox), Target: dd.SupervisorMountPath, ReadOnly: true},
		}
		info := run(ctx, target)
		Expect(info.SupervisorVolume).NotTo(BeEmpty())
		return target.Name, o
	}
	filled := func(ctx context.Context) func(dd.Owner) string {
		return func(o dd.Owner) string {
			v, err := driver.EnsureVolume(ctx, dd.VolumeSpec{Name: dd.Name(o, dsv1alpha1.RoleSupervise, ""), Owner: o, Role: dsv1alpha1.RoleSupervise, Supervisor: holderImage})
			Expect(err).NotTo(HaveOccurred())
			return v.Name
		}
	}

	It("cannot be replaced by a root command before or between Executions, whose results stay the commands' own", func(ctx SpecContext) {
		name, _ := primary(ctx, filled(ctx))
		before := sh(ctx, name, replace, 30*time.Second)
		Expect(string(before.Stdout)).To(Equal("0\n"), "the command runs as root")
		Expect(string(before.Stderr)).To(ContainSubstring("Read-only file system"))
		first := execution(ctx, name, "echo real; exit 3")
		Expect(first.ExitCode).To(Equal(3))
		Expect(string(first.Stdout)).To(Equal("real\n"))
		between := execution(ctx, name, replace)
		Expect(between.ExitCode).To(Equal(4), string(between.Stderr))
		// Its own output, though, a root command can spoil while it runs: it swapped the runs folder for a
		// link to its fake, which is what is read back of this run.
		Expect(string(between.Stdout)).To(Equal("fake\n"))
		next := execution(ctx, name, "echo next; exit 5")
		Expect(next.ExitCode).To(Equal(5), string(next.Stderr))
		Expect(string(next.Stdout)).To(Equal("next\n"))
		st := sh(ctx, name, "stat -c '%a %u %s' "+supervisor+"; grep -c ' "+dd.SupervisorMountPath+" .* ro,' /proc/mounts", 30*time.Second)
		Expect(string(st.Stdout)).To(MatchRegexp(`^555 0 [0-9]{6,}\n1\n$`), "the agent's supervisor, on a read-only mount")
	})

	It("leaves no filler behind and carries the Sandbox's labels, so it goes with the Sandbox", func(ctx SpecContext) {
		name, o := primary(ctx, filled(ctx))
		filled(ctx)(dd.Owner{Namespace: o.Namespace, Name: o.Name, UID: o.UID}) // filled again, as each new primary does
		match := map[string]string{dsv1alpha1.LabelUID: o.UID}
		cs, err := driver.ListContainers(ctx, match)
		Expect(err).NotTo(HaveOccurred())
		Expect(cs).To(HaveLen(1), "the primary alone: no filler is left")
		Expect(cs[0].Name).To(Equal(name))
		vs, err := driver.ListVolumes(ctx, match)
		Expect(err).NotTo(HaveOccurred())
		roles := []string{}
		for _, v := range vs {
			roles = append(roles, v.Labels[dsv1alpha1.LabelRole])
		}
		Expect(roles).To(ConsistOf(dsv1alpha1.RoleRun, dsv1alpha1.RoleSupervise))
		// What removeOwned does (internal/controller/sandbox/delete.go): everything found by the UID label.
		Expect(driver.RemoveContainer(ctx, name)).To(Succeed())
		for _, v := range vs {
			Expect(driver.RemoveVolume(ctx, v.Name)).To(Succeed())
			_, err := docker.VolumeInspect(ctx, v.Name)
			Expect(cerrdefs.IsNotFound(err)).To(BeTrue(), "volume %s is gone", v.Name)
		}
	})

	It("holding no supervisor of this agent's version, gives way to the run volume's, written over a root command's each time", func(ctx SpecContext) {
		name, _ := primary(ctx, func(o dd.Owner) string {
			// What an agent of another version filled: nothing under this version's name.
			v, err := docker.VolumeCreate(ctx, volume.CreateOptions{
				Name: dd.Name(o, dsv1alpha1.RoleSupervise, ""), Driver: "local", Labels: dd.Labels(node, o, dsv1alpha1.RoleSupervise, ""),
			})
			Expect(err).NotTo(HaveOccurred())
			return v.Name
		})
		planted := sh(ctx, name, replace, 30*time.Second)
		Expect(string(planted.Stdout)).To(Equal("0\n"), "the command runs as root")
		res := execution(ctx, name, "echo real; exit 3")
		Expect(res.ExitCode).To(Equal(3), string(res.Stderr))
		Expect(string(res.Stdout)).To(Equal("real\n"))
		Expect(execution(ctx, name, replace).ExitCode).To(Equal(4))
		next := execution(ctx, name, "echo next; exit 5")
		Expect(next.ExitCode).To(Equal(5), string(next.Stderr))
		Expect(string(next.Stdout)).To(Equal("next\n"))
	})
})
