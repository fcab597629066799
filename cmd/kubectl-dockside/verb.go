package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Exit codes of every verb but exec, which exits with its command's own (see execUsage).
const (
	exitFailed   = 1   // Dockside or the API server reported a failure; the message says which
	exitUsage    = 2   // the arguments or flags are wrong
	exitTooLarge = 3   // cp: the copy is past the bound of the mount it goes to
	exitTimeout  = 124 // --timeout passed while waiting (as timeout(1) and exec's deadline)
)

// pollInterval is how often a verb that waits reads its object again: a person waits for it, and a Sandbox
// or Checkpoint takes a second or more to change, so a watch would buy nothing worth its code here.
const pollInterval = 500 * time.Millisecond

// verb is one subcommand: its usage text (first line "Usage: ..."), its flags and what it does with the
// positional arguments left after them.
type verb struct {
	usage   string
	minArgs int
	maxArgs int
	flags   func(fs *flag.FlagSet)
	run     func(ctx context.Context, args []string) error
}

// exitError carries the exit code a failure should end the plugin with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// runVerb parses args (flags may come before, between and after the positional arguments, as kubectl
// takes them; "--" ends the flags), runs the verb and says which exit code to end with.
func runVerb(name string, v verb, args []string) int {
	fs := flag.NewFlagSet("kubectl dockside "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	v.flags(fs)
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(os.Stdout, fs, v.usage)
		return 0
	case err == nil && (len(pos) < v.minArgs || len(pos) > v.maxArgs):
		err = fmt.Errorf("%d arguments given, %s", len(pos), wantArgs(v.minArgs, v.maxArgs))
	}
	if err != nil {
		warn("%s: %v", name, err)
		printUsage(os.Stderr, fs, v.usage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return exitCode(name, v.run(ctx, pos))
}

func wantArgs(lo, hi int) string {
	if lo == hi {
		return fmt.Sprintf("%d wanted", lo)
	}
	return fmt.Sprintf("%d to %d wanted", lo, hi)
}

func printUsage(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprint(w, usage, "\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// exitCode reports err, if any, and maps it to the verb's exit code.
func exitCode(name string, err error) int {
	if err == nil {
		return 0
	}
	warn("%s: %v", name, err)
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.DeadlineExceeded):
		return exitTimeout
	case errors.Is(err, context.Canceled):
		return exitInterrupt
	}
	return exitFailed
}

// parseInterspersed parses fs from args with flags anywhere among the positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// poll reads obj until done says it has arrived, done fails, or ctx ends (the error is then ctx's).
func poll(ctx context.Context, c client.Client, obj client.Object, done func() (bool, error)) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("reading %s: %w", client.ObjectKeyFromObject(obj), err)
		}
		if ok, err := done(); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// waitFlags are --wait and --timeout of the verbs that wait for the agent.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) add(fs *flag.FlagSet, what string, timeout time.Duration) {
	fs.BoolVar(&w.wait, "wait", true, "wait until "+what)
	fs.DurationVar(&w.timeout, "timeout", timeout, "how long to wait; past it the plugin exits 124")
}

// readyOf says what an object's Ready condition says, for messages: "Reason: message", or that the agent has
// not written it yet.
func readyOf(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, dsv1alpha1.ConditionReady)
	if c == nil {
		return "no agent has reported on it yet"
	}
	return fmt.Sprintf("Ready=%s, %s: %s", c.Status, c.Reason, c.Message)
}

// stalledAt returns the Stalled condition when it is True and was written for generation gen or later: the
// agent will not get further without a change.
func stalledAt(conds []metav1.Condition, gen int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, dsv1alpha1.ConditionStalled)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration < gen {
		return nil
	}
	return c
}

// timedOut wraps ctx's end with what was awaited and how the object stood.
func timedOut(err error, what, state string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out waiting for %s (%s): %w", what, state, err)
	}
	return err
}
