package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/pkg/execution"
)

// Exit codes when the command gave none, in the spirit of timeout(1) and docker run.
const (
	exitDeadline  = 124 // the command ran past its deadline
	exitNoCommand = 125 // it did not exit on its own for another reason, or the plugin failed
	exitInterrupt = 130 // the user interrupted the plugin, which cancelled the command
	maxStdin      = 64 << 10
)

const runUsage = `Usage: kubectl dockside run [flags] SANDBOX -- COMMAND [ARG...]

Runs COMMAND in the session Sandbox SANDBOX through an Execution (an object: a deadline, an audit record, its
output kept in status), prints its standard output and standard error once it ended, and exits with its exit
code: 124 when it ran past --timeout (the Sandbox's container is then killed),
125 when it did not exit on its own for another reason (the reason is printed), 130 when interrupted (the
Execution is deleted, which stops the command), and 2 for a usage error, found before anything runs.

Flags:
`

type runOptions struct {
	kubeFlags
	stdin, keep bool
	timeout     time.Duration
	maxOutput   int
	env         envFlag
	workdir     string
}

func runFlags(o *runOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("kubectl dockside run", flag.ContinueOnError)
	o.add(fs)
	fs.BoolVar(&o.stdin, "stdin", false, "send the plugin's standard input (at most 64 KiB) to the command")
	fs.BoolVar(&o.stdin, "i", false, "shorthand for --stdin")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "deadline of the command, in whole seconds; past it the Sandbox's container is killed")
	fs.IntVar(&o.maxOutput, "max-output-bytes", 0, "bytes kept of each of stdout and stderr (default 65536; the node may lower it)")
	fs.Var(&o.env, "env", "NAME=VALUE to add to the command's environment (repeatable)")
	fs.Var(&o.env, "e", "shorthand for --env")
	fs.StringVar(&o.workdir, "workdir", "", "absolute directory the command starts in")
	fs.StringVar(&o.workdir, "w", "", "shorthand for --workdir")
	fs.BoolVar(&o.keep, "keep", false, "keep the Execution (until its ttlSecondsAfterFinished) instead of deleting it")
	return fs
}

func runExecution(args []string) int {
	o := &runOptions{env: envFlag{}}
	fs := runFlags(o)
	fs.SetOutput(io.Discard)
	sandbox, command, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(os.Stdout, runUsage)
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		return 0
	}
	if err != nil {
		return fail(exitUsage, "%v\n\n%s", err, runUsage)
	}
	req := execution.Request{
		Sandbox: sandbox, Command: command, Env: o.env, WorkingDir: o.workdir, Timeout: o.timeout,
		MaxOutputBytes: int32(o.maxOutput), Keep: o.keep,
	}
	if o.stdin {
		if req.Stdin, err = readStdin(); err != nil {
			return fail(exitNoCommand, "%v", err)
		}
	}
	cfg, ns, err := o.config()
	if err != nil {
		return fail(exitNoCommand, "%v", err)
	}
	req.Namespace = ns
	c, err := execution.New(cfg)
	if err != nil {
		return fail(exitNoCommand, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := c.Run(ctx, req)
	switch {
	case errors.Is(err, context.Canceled):
		return fail(exitInterrupt, "interrupted: the Execution was deleted, which stops the command")
	case err != nil:
		return fail(exitNoCommand, "%v", err)
	}
	return report(res)
}

// report prints the command's output, then what the plugin knows beyond it, and says which exit code to use.
func report(res *execution.Result) int {
	fmt.Fprint(os.Stdout, res.Stdout)
	fmt.Fprint(os.Stderr, res.Stderr)
	if res.StdoutTruncatedBytes > 0 || res.StderrTruncatedBytes > 0 {
		warn("output past --max-output-bytes was cut: %d bytes of stdout, %d of stderr", res.StdoutTruncatedBytes, res.StderrTruncatedBytes)
	}
	switch {
	case res.ExitCode == nil && res.Reason == dsv1alpha1.ReasonDeadlineExceeded:
		return fail(exitDeadline, "%s", res.Message)
	case res.ExitCode == nil:
		return fail(exitNoCommand, "%s: %s", res.Reason, res.Message)
	case res.SandboxKilled:
		warn("%s", res.Message) // processes left running: the Sandbox's container was killed
	}
	return int(*res.ExitCode)
}

// parseArgs reads [flags] SANDBOX [flags] -- COMMAND [ARG...], as kubectl exec takes them: flags may come on
// either side of the Sandbox's name, and everything after "--" is the command's (the "--" may be left out
// when the command starts with no dash).
func parseArgs(fs *flag.FlagSet, args []string) (string, []string, error) {
	if err := fs.Parse(args); err != nil {
		return "", nil, err
	}
	if fs.NArg() == 0 {
		return "", nil, errors.New("a Sandbox name is required")
	}
	sandbox := fs.Arg(0)
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		return "", nil, err
	}
	if fs.NArg() == 0 {
		return "", nil, errors.New("a command is required after the Sandbox name and --")
	}
	return sandbox, fs.Args(), nil
}

func readStdin() (string, error) {
	data, err := io.ReadAll(io.LimitReader(os.Stdin, maxStdin+1))
	if err != nil {
		return "", fmt.Errorf("reading standard input: %w", err)
	}
	if len(data) > maxStdin {
		return "", fmt.Errorf("standard input is larger than %d bytes, the most an Execution takes", maxStdin)
	}
	return string(data), nil
}

// envFlag collects NAME=VALUE flags.
type envFlag map[string]string

func (e envFlag) String() string { return "" }

func (e envFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("--env wants NAME=VALUE, not %q", v)
	}
	e[name] = value
	return nil
}

func warn(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kubectl-dockside: "+format+"\n", args...)
}

func fail(code int, format string, args ...any) int {
	warn(format, args...)
	return code
}
