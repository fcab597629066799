package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/objectwait"
)

const claimUsage = `Usage: kubectl dockside claim [flags] POOL [NAME]

Creates a SandboxClaim of the SandboxWarmPool POOL named NAME (default: POOL- and a random suffix), waits
until it is Ready and prints the claim, the Sandbox it got and how it started:

  claim: python-x7k2p
  sandbox: python-3
  start: Warm

A warm Sandbox of the pool is taken at once; when the pool has none ready, one is started for the claim
(start: Cold). --env reaches every command run in the Sandbox (kubectl dockside exec, run), not its primary's
own process. Deleting the claim (kubectl delete sandboxclaim NAME) deletes the Sandbox (docs/pools.md).
Exit codes: 0 Ready, 1 the claim failed or Dockside refused it (the reason is printed), 2 usage,
124 --timeout passed (the claim is left as it is).
`

func claimVerb() verb {
	k, w := &kubeFlags{}, &waitFlags{}
	var env, labels listFlag
	var deadline int64
	return verb{
		usage: claimUsage, minArgs: 1, maxArgs: 2,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			w.add(fs, "the claim is Ready", 5*time.Minute)
			fs.Var(&env, "env", "NAME=VALUE given to every command run in the Sandbox (repeatable)")
			fs.Var(&labels, "label", "KEY=VALUE put on the Sandbox (repeatable)")
			fs.Int64Var(&deadline, "active-deadline-seconds", 0, "how long the Sandbox may run, counted from the claim (default: the template's)")
		},
		run: func(ctx context.Context, args []string) error {
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			spec, err := claimSpec(args[0], env, labels, deadline)
			if err != nil {
				return err
			}
			return claim(ctx, k, w, name, spec)
		},
	}
}

// claimSpec is the claim the flags ask for.
func claimSpec(pool string, env, labels []string, deadline int64) (dsv1alpha1.SandboxClaimSpec, error) {
	spec := dsv1alpha1.SandboxClaimSpec{PoolRef: dsv1alpha1.LocalObjectReference{Name: pool}}
	for _, e := range env {
		name, value, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			return spec, usageError("--env %q is not NAME=VALUE", e)
		}
		spec.Env = append(spec.Env, dsv1alpha1.ExecutionEnvVar{Name: name, Value: value})
	}
	for _, l := range labels {
		key, value, ok := strings.Cut(l, "=")
		if !ok || key == "" {
			return spec, usageError("--label %q is not KEY=VALUE", l)
		}
		if spec.Labels == nil {
			spec.Labels = map[string]string{}
		}
		spec.Labels[key] = value
	}
	if deadline != 0 {
		spec.ActiveDeadlineSeconds = &deadline
	}
	return spec, nil
}

func claim(ctx context.Context, k *kubeFlags, w *waitFlags, name string, spec dsv1alpha1.SandboxClaimSpec) error {
	c, ns, err := k.client()
	if err != nil {
		return err
	}
	cl := &dsv1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if name == "" {
		cl.GenerateName = spec.PoolRef.Name + "-"
	}
	if err := c.Create(ctx, cl); err != nil {
		return fmt.Errorf("creating a SandboxClaim of pool %s/%s: %w", ns, spec.PoolRef.Name, err)
	}
	if !w.wait {
		fmt.Printf("claim: %s\n", cl.Name)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	if err := watchClaim(ctx, c, cl); err != nil {
		return timedOut(err, "SandboxClaim "+cl.Name+" to be Ready", readyOf(cl.Status.Conditions))
	}
	fmt.Printf("claim: %s\nsandbox: %s\nstart: %s\n", cl.Name, cl.Status.SandboxName, cl.Status.Start)
	return nil
}

// watchClaim waits with a watch until the claim is Ready or Stalled, cl following it.
func watchClaim(ctx context.Context, c client.WithWatch, cl *dsv1alpha1.SandboxClaim) error {
	got, err := objectwait.Until(ctx, c, cl, &dsv1alpha1.SandboxClaimList{}, "SandboxClaim", claimDone)
	*cl = *got
	return err //nolint:wrapcheck // it names the claim already
}

// claimDone says whether the claim is Ready, or why it will not be.
func claimDone(cl *dsv1alpha1.SandboxClaim) (bool, error) {
	if c := stalledAt(cl.Status.Conditions, cl.Generation); c != nil {
		return false, fmt.Errorf("the SandboxClaim %s failed: %s: %s", cl.Name, c.Reason, c.Message)
	}
	return meta.IsStatusConditionTrue(cl.Status.Conditions, dsv1alpha1.ConditionReady), nil
}
