package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

const checkpointUsage = `Usage: kubectl dockside checkpoint [flags] SANDBOX [NAME]

Creates a Checkpoint of SANDBOX's workspace named NAME (default: SANDBOX- and a random suffix), waits until
it is Ready and prints its name, size and digest:

  name: shell-x7k2p
  size: 1.5Mi (1572864 bytes)
  digest: sha256:...

The Sandbox is frozen for the copy and thawed right after (a paused one stays paused). Restore it into a new
Sandbox with: kubectl dockside restore NAME NEW-SANDBOX.
Exit codes: 0 Ready, 1 the Checkpoint failed or Dockside refused it (the reason is printed), 2 usage,
124 --timeout passed (the Checkpoint is left as it is).
`

func checkpointVerb() verb {
	k, w := &kubeFlags{}, &waitFlags{}
	var paths listFlag
	return verb{
		usage: checkpointUsage, minArgs: 1, maxArgs: 2,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			w.add(fs, "the Checkpoint is Ready", 5*time.Minute)
			fs.Var(&paths, "path", "a path inside the workspace to capture, relative to it (repeatable; default: the whole workspace)")
		},
		run: func(ctx context.Context, args []string) error {
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			return checkpoint(ctx, k, w, args[0], name, paths)
		},
	}
}

func checkpoint(ctx context.Context, k *kubeFlags, w *waitFlags, sandbox, name string, paths []string) error {
	c, ns, err := k.client()
	if err != nil {
		return err
	}
	// A Checkpoint of a Sandbox that does not exist would wait for it: say so now instead.
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: sandbox}, &dsv1alpha1.Sandbox{}); err != nil {
		return fmt.Errorf("reading Sandbox %s/%s: %w", ns, sandbox, err)
	}
	ckpt := &dsv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.CheckpointSpec{SandboxName: sandbox, Paths: paths},
	}
	if name == "" {
		ckpt.GenerateName = sandbox + "-"
	}
	if err := c.Create(ctx, ckpt); err != nil {
		return fmt.Errorf("creating the Checkpoint of Sandbox %s/%s: %w", ns, sandbox, err)
	}
	if !w.wait {
		fmt.Printf("name: %s\n", ckpt.Name)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	err = poll(ctx, c, ckpt, func() (bool, error) {
		switch ckpt.Status.Phase {
		case dsv1alpha1.CheckpointReady:
			return true, nil
		case dsv1alpha1.CheckpointFailed:
			return false, fmt.Errorf("the Checkpoint %s failed: %s", ckpt.Name, readyOf(ckpt.Status.Conditions))
		}
		return false, nil
	})
	if err != nil {
		return timedOut(err, "Checkpoint "+ckpt.Name+" to be Ready", readyOf(ckpt.Status.Conditions))
	}
	fmt.Printf("name: %s\nsize: %s (%d bytes)\ndigest: %s\n", ckpt.Name, ckpt.Status.Size, ckpt.Status.SizeBytes, ckpt.Status.Digest)
	return nil
}

// listFlag collects the values of a repeated flag (--path, --image).
type listFlag []string

func (p *listFlag) String() string { return "" }

func (p *listFlag) Set(v string) error {
	*p = append(*p, v)
	return nil
}
