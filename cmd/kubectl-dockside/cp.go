package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/pkg/execution"
)

// cp sends files base64-encoded, so that any bytes arrive as they are: an Execution's stdin and output are
// UTF-8 text in the API. The bounds follow from the Execution's: 64 KiB of stdin holds 48 KiB encoded, and
// 256 KiB of output holds 128 KiB encoded with base64's line breaks (77 bytes for every 57), with room left.
const (
	maxCopyIn  = 48 << 10
	maxCopyOut = 128 << 10
)

const cpUsage = `Usage: kubectl dockside cp [flags] SANDBOX:PATH LOCAL
       kubectl dockside cp [flags] LOCAL SANDBOX:PATH

Copies one small file out of or into a session Sandbox through an Execution (so RBAC and the audit log see
it). LOCAL "-" is standard output or input. A PATH that is a folder (in the Sandbox, or LOCAL on this side)
gets the file under its source's name; a relative PATH is relative to the command's working directory
(--workdir, default the image's). Any bytes are copied as they are: the file travels base64-encoded, so the
Sandbox's image needs sh and base64 (busybox and coreutils have both).
Bounds: at most 49152 bytes (48 KiB) in, and 131072 bytes (128 KiB) out; past them nothing is copied, and
the message says so. Names and modes are not kept: a file copied in is made with the container's umask.
Exit codes: 0 copied, 1 the copy failed (the reason is printed), 2 usage, 3 the file is past the bound,
124 --timeout passed.
`

func cpVerb() verb {
	k := &kubeFlags{}
	o := &cpOptions{}
	return verb{
		usage: cpUsage, minArgs: 2, maxArgs: 2,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			fs.DurationVar(&o.timeout, "timeout", time.Minute, "deadline of the copy's Execution, in whole seconds")
			fs.StringVar(&o.workdir, "workdir", "", "absolute directory a relative PATH is taken from")
			fs.StringVar(&o.workdir, "w", "", "shorthand for --workdir")
		},
		run: func(ctx context.Context, args []string) error {
			req, err := parseCopy(args[0], args[1])
			if err != nil {
				return err
			}
			req.cpOptions = *o
			return copyFile(ctx, k, req)
		},
	}
}

type cpOptions struct {
	timeout time.Duration
	workdir string
}

// copyRequest is one copy: in (local to Sandbox) or out.
type copyRequest struct {
	cpOptions
	in      bool
	sandbox string
	remote  string // path in the Sandbox
	local   string // path here, or "-"
}

// remoteArg is SANDBOX:PATH, SANDBOX a DNS label (so that C:\x, ./a:b and /a:b are local, as in kubectl cp).
var remoteArg = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?):(.+)$`)

// parseCopy tells the direction of a copy from which of its arguments names a Sandbox.
func parseCopy(src, dst string) (copyRequest, error) {
	s, d := remoteArg.FindStringSubmatch(src), remoteArg.FindStringSubmatch(dst)
	switch {
	case s != nil && d != nil:
		return copyRequest{}, usageError("both %q and %q name a Sandbox: one side must be local (write ./%s for a local name with a colon)", src, dst, src)
	case s == nil && d == nil:
		return copyRequest{}, usageError("neither %q nor %q is SANDBOX:PATH", src, dst)
	case s != nil:
		return copyRequest{sandbox: s[1], remote: s[3], local: dst}, nil
	}
	return copyRequest{in: true, sandbox: d[1], remote: d[3], local: src}, nil
}

func copyFile(ctx context.Context, k *kubeFlags, req copyRequest) error {
	cfg, ns, err := k.config()
	if err != nil {
		return err
	}
	c, err := execution.New(cfg)
	if err != nil {
		return fmt.Errorf("making the Execution client: %w", err)
	}
	if req.in {
		return copyIn(ctx, c, ns, req)
	}
	return copyOut(ctx, c, ns, req)
}

// copyInScript writes stdin, decoded, to $1 (or $1/$2 when $1 is a folder), through a temporary file so
// that a copy that fails leaves no half-written file under the name.
const copyInScript = `f=$1; [ -d "$f" ] && f=$f/$2
base64 -d > "$f.cp-tmp" && mv -f "$f.cp-tmp" "$f" || { rm -f "$f.cp-tmp"; exit 1; }`

func copyIn(ctx context.Context, c *execution.Client, ns string, req copyRequest) error {
	data, err := readLocal(req.local)
	if err != nil {
		return err
	}
	name := filepath.Base(req.local)
	if req.local == "-" {
		name = "stdin"
	}
	_, err = runCopy(ctx, c, execution.Request{
		Namespace: ns, Sandbox: req.sandbox, Command: []string{"sh", "-c", copyInScript, "sh", req.remote, name},
		Stdin: base64.StdEncoding.EncodeToString(data),
	}, req)
	return err
}

// readLocal reads the file to copy in, refusing one past the bound before anything is sent.
func readLocal(name string) ([]byte, error) {
	f := os.Stdin
	if name != "-" {
		var err error
		if f, err = os.Open(name); err != nil {
			return nil, fmt.Errorf("reading the file to copy in: %w", err)
		}
		defer f.Close()
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCopyIn+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > maxCopyIn {
		return nil, tooLarge("%s is larger than %d bytes, the most cp copies in (an Execution's stdin holds 64 KiB, and the file travels base64-encoded)", name, maxCopyIn)
	}
	return data, nil
}

// copyOutScript prints $1 base64-encoded, or, when it is past the bound $2, only its size with exit code 3.
const copyOutScript = `[ -f "$1" ] || { echo "$1: not a regular file" >&2; exit 1; }
n=$(wc -c < "$1") || exit 1
[ $((n)) -le "$2" ] || { echo $((n)); exit 3; }
base64 "$1"`

func copyOut(ctx context.Context, c *execution.Client, ns string, req copyRequest) error {
	res, err := runCopy(ctx, c, execution.Request{
		Namespace: ns, Sandbox: req.sandbox,
		Command:        []string{"sh", "-c", copyOutScript, "sh", req.remote, strconv.Itoa(maxCopyOut)},
		MaxOutputBytes: dsv1alpha1.MaxExecutionOutputBytes,
	}, req)
	if err != nil {
		return err
	}
	data, err := base64.StdEncoding.DecodeString(res.Stdout)
	if err != nil {
		return fmt.Errorf("%s:%s: the Sandbox's base64 printed what cannot be decoded: %w", req.sandbox, req.remote, err)
	}
	if req.local == "-" {
		if _, err := os.Stdout.Write(data); err != nil {
			return fmt.Errorf("writing the copy to stdout: %w", err)
		}
		return nil
	}
	dst := req.local
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		dst = filepath.Join(dst, path.Base(req.remote))
	}
	if err := os.WriteFile(dst, data, 0o666); err != nil {
		return fmt.Errorf("writing the copy: %w", err)
	}
	return nil
}

// runCopy runs one copy's Execution and turns how it ended into the copy's error.
func runCopy(ctx context.Context, c *execution.Client, r execution.Request, req copyRequest) (*execution.Result, error) {
	r.Timeout, r.WorkingDir = req.timeout, req.workdir
	res, err := c.Run(ctx, r)
	where := req.sandbox + ":" + req.remote
	switch {
	case err != nil:
		return nil, fmt.Errorf("running the copy of %s: %w", where, err)
	case res.StdoutTruncatedBytes > 0:
		return nil, tooLarge("%s: its encoded copy is more output than the node keeps of an Execution (the agent's --max-exec-output-bytes is below %d)", where, dsv1alpha1.MaxExecutionOutputBytes)
	case res.ExitCode == nil:
		return nil, fmt.Errorf("%s: %s: %s", where, res.Reason, res.Message)
	case !req.in && *res.ExitCode == exitTooLarge:
		return nil, tooLarge("%s is %s bytes, more than the %d bytes cp copies out (an Execution keeps at most 256 KiB of output, and the file travels base64-encoded)", where, strings.TrimSpace(res.Stdout), maxCopyOut)
	case *res.ExitCode != 0:
		return nil, fmt.Errorf("%s: copying failed with exit code %d: %s", where, *res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return res, nil
}

func tooLarge(format string, args ...any) error {
	return &exitError{code: exitTooLarge, err: fmt.Errorf(format, args...)}
}
