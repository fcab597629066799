package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

const pauseUsage = `Usage: kubectl dockside pause [flags] SANDBOX

Freezes every container of SANDBOX (spec.lifecycle: Paused): its processes, memory and files are kept, and
nothing of it runs until it is resumed. Waits until the agent reports it frozen (condition Paused=True).
Exit codes: 0 paused, 1 Dockside refused or failed (the reason is printed), 2 usage, 124 --timeout passed.
`

const resumeUsage = `Usage: kubectl dockside resume [flags] SANDBOX

Thaws a paused SANDBOX (spec.lifecycle: Running): its processes go on where they were frozen. Waits until
the agent reports it thawed (condition Paused=False).
Exit codes: 0 running, 1 Dockside refused or failed (the reason is printed), 2 usage, 124 --timeout passed.
`

func lifecycleVerb(want dsv1alpha1.Lifecycle, usage string) verb {
	k, w := &kubeFlags{}, &waitFlags{}
	return verb{
		usage: usage, minArgs: 1, maxArgs: 1,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			w.add(fs, "the agent has frozen or thawed every container", time.Minute)
		},
		run: func(ctx context.Context, args []string) error {
			return setLifecycle(ctx, k, w, args[0], want)
		},
	}
}

// setLifecycle patches spec.lifecycle and waits until the agent's Paused condition, written for that
// generation or a later one, says it is done.
func setLifecycle(ctx context.Context, k *kubeFlags, w *waitFlags, name string, want dsv1alpha1.Lifecycle) error {
	c, sbx, err := k.sandbox(ctx, name)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(sbx.DeepCopy())
	sbx.Spec.Lifecycle = want
	if err := c.Patch(ctx, sbx, patch); err != nil {
		return fmt.Errorf("setting the lifecycle of Sandbox %s/%s to %s: %w", sbx.Namespace, sbx.Name, want, err)
	}
	if want == dsv1alpha1.LifecycleRunning && dsv1alpha1.IdlePaused(sbx) {
		if err := k.thaw(ctx, sbx); err != nil {
			return err
		}
	}
	if !w.wait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	gen := sbx.Generation
	err = poll(ctx, c, sbx, func() (bool, error) { return lifecycleDone(sbx, gen, want) })
	if err != nil {
		return timedOut(err, fmt.Sprintf("Sandbox %s to be %s", name, want), pausedOf(sbx))
	}
	fmt.Printf("sandbox/%s %s\n", name, map[dsv1alpha1.Lifecycle]string{dsv1alpha1.LifecyclePaused: "paused", dsv1alpha1.LifecycleRunning: "resumed"}[want])
	return nil
}

// lifecycleDone tells whether the agent has frozen (or thawed) the Sandbox as spec generation gen asks, or
// has given up on it (Stalled: a poisoned topology or a finished run is neither frozen nor thawed).
func lifecycleDone(sbx *dsv1alpha1.Sandbox, gen int64, want dsv1alpha1.Lifecycle) (bool, error) {
	if c := stalledAt(sbx.Status.Conditions, gen); c != nil {
		return false, fmt.Errorf("the Sandbox %s cannot be %s: %s: %s", sbx.Name, want, c.Reason, c.Message)
	}
	c := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionPaused)
	if c == nil || c.ObservedGeneration < gen {
		return false, nil
	}
	paused := meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionPaused)
	if want == dsv1alpha1.LifecyclePaused {
		return paused, nil
	}
	return !paused && sbx.Status.Phase != dsv1alpha1.SandboxPaused, nil
}

// pausedOf is what the Paused condition says, for a message.
func pausedOf(sbx *dsv1alpha1.Sandbox) string {
	if c := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionPaused); c != nil {
		return fmt.Sprintf("Paused=%s, %s: %s", c.Status, c.Reason, c.Message)
	}
	return readyOf(sbx.Status.Conditions)
}

// thaw wakes a Sandbox its agent froze for idleness: its spec already says Running, so the patch changes
// nothing, and what thaws it is a call to it (docs/design/idle-pause.md); a stat of / is the lightest.
func (k *kubeFlags) thaw(ctx context.Context, sbx *dsv1alpha1.Sandbox) error {
	cfg, _, err := k.config()
	if err != nil {
		return err
	}
	fc, err := newFilesClient(cfg, sbx.Namespace, sbx.Name)
	if err != nil {
		return err
	}
	if _, err := fc.stat(ctx, "/"); err != nil {
		return fmt.Errorf("waking the idle Sandbox %s: %w", sbx.Name, err)
	}
	return nil
}
