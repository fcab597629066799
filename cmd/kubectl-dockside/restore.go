package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

const restoreUsage = `Usage: kubectl dockside restore [flags] CHECKPOINT NEW-SANDBOX

Creates the Sandbox NEW-SANDBOX whose workspace starts as a copy of CHECKPOINT (spec.restoreFrom), and waits
until it is Ready. Its spec is that of the Sandbox the Checkpoint was taken of (running, not paused, and
bound by the agents afresh), with --image in place of its image; when that Sandbox no longer exists,
--image is required and the new Sandbox is a plain session of that image.
Exit codes: 0 Ready, 1 the restore failed or Dockside refused it (the reason is printed), 2 usage,
124 --timeout passed (the new Sandbox is left as it is).
`

func restoreVerb() verb {
	k, w := &kubeFlags{}, &waitFlags{}
	var image string
	return verb{
		usage: restoreUsage, minArgs: 2, maxArgs: 2,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			w.add(fs, "the new Sandbox is Ready", 5*time.Minute)
			fs.StringVar(&image, "image", "", "image of the new Sandbox (default: that of the Sandbox the Checkpoint was taken of)")
		},
		run: func(ctx context.Context, args []string) error {
			return restore(ctx, k, w, args[0], args[1], image)
		},
	}
}

func restore(ctx context.Context, k *kubeFlags, w *waitFlags, checkpoint, name, image string) error {
	c, ns, err := k.client()
	if err != nil {
		return err
	}
	ckpt := &dsv1alpha1.Checkpoint{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: checkpoint}, ckpt); err != nil {
		return fmt.Errorf("reading Checkpoint %s/%s: %w", ns, checkpoint, err)
	}
	source := &dsv1alpha1.Sandbox{}
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ckpt.Spec.SandboxName}, source)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading the Checkpoint's Sandbox %s/%s: %w", ns, ckpt.Spec.SandboxName, err)
	}
	spec, err := restoredSpec(ckpt, source, !apierrors.IsNotFound(err), image)
	if err != nil {
		return err
	}
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: *spec}
	if err := c.Create(ctx, sbx); err != nil {
		return fmt.Errorf("creating Sandbox %s/%s: %w", ns, name, err)
	}
	if !w.wait {
		fmt.Printf("sandbox/%s created\n", name)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	err = poll(ctx, c, sbx, func() (bool, error) {
		if c := stalledAt(sbx.Status.Conditions, sbx.Generation); c != nil {
			return false, fmt.Errorf("the Sandbox %s did not restore: %s: %s", name, c.Reason, c.Message)
		}
		return meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionRestored) &&
			meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionReady), nil
	})
	if err != nil {
		return timedOut(err, "Sandbox "+name+" to be restored and Ready", readyOf(sbx.Status.Conditions))
	}
	fmt.Printf("sandbox/%s restored from checkpoint/%s\n", name, checkpoint)
	return nil
}

// restoredSpec is the spec of a Sandbox restoring from ckpt: its source's (when it still exists) less what
// belongs to the source's own run of it, with image in place of the source's when given.
func restoredSpec(ckpt *dsv1alpha1.Checkpoint, source *dsv1alpha1.Sandbox, sourceExists bool, image string) (*dsv1alpha1.SandboxSpec, error) {
	spec := &dsv1alpha1.SandboxSpec{}
	switch {
	case sourceExists:
		spec = source.Spec.DeepCopy()
		spec.NodeName = "" // the agents bind it where the Checkpoint can be read
		spec.Lifecycle = ""
	case image == "":
		return nil, usageError("Sandbox %s, which Checkpoint %s was taken of, no longer exists: give the new Sandbox's --image", ckpt.Spec.SandboxName, ckpt.Name)
	}
	if image != "" {
		spec.Image = image
	}
	spec.RestoreFrom = ckpt.Name
	return spec, nil
}
