package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
)

const cpUsage = `Usage: kubectl dockside cp [flags] SANDBOX:PATH LOCAL
       kubectl dockside cp [flags] LOCAL SANDBOX:PATH

Copies a file, or a directory with everything in it, out of or into a Sandbox's primary container through the
API server's files subresource (so RBAC and the audit log see it: copying out needs get on sandboxes/files,
copying in create). Any size up to what the mount it goes to holds; the data streams through, never held
whole in memory. LOCAL "-" is standard input (one file) or output (a file's bytes, or a directory as a tar
stream). A destination that is an existing directory gets the source under its own name, as cp -r does; a
relative PATH is taken from --workdir (default the Sandbox's workingDir, else its workspace). A file copied
in replaces the old one atomically, keeps the local file's permission bits and belongs to the container's
user. Copies in go to the workspace, /tmp and scratch mounts (and a writable root file system): the rest of
the root is read-only.
Exit codes: 0 copied, 1 the copy failed (the reason is printed), 2 usage, 3 the copy is past the bound of
the mount it goes to (nothing of a file is left), 124 --timeout passed.
`

func cpVerb() verb {
	k := &kubeFlags{}
	o := &cpOptions{}
	return verb{
		usage: cpUsage, minArgs: 2, maxArgs: 2,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			fs.DurationVar(&o.timeout, "timeout", 0, "deadline of the whole copy (0: none)")
			fs.StringVar(&o.workdir, "workdir", "", "absolute directory a relative PATH is taken from")
			fs.StringVar(&o.workdir, "w", "", "shorthand for --workdir")
		},
		run: func(ctx context.Context, args []string) error {
			req, err := parseCopy(args[0], args[1])
			if err != nil {
				return err
			}
			req.cpOptions = *o
			if req.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, req.timeout)
				defer cancel()
			}
			c, remote, err := k.files(ctx, req.sandbox, req.remote, req.workdir)
			if err != nil {
				return err
			}
			req.remote = remote
			if req.in {
				return copyIn(ctx, c, req)
			}
			return copyOut(ctx, c, req)
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

// files is the files client of a Sandbox and p made absolute: from workdir, else the Sandbox's working
// directory, else its workspace's mount path (read from the Sandbox only when p is relative). A trailing
// "/" is kept: it says p is a directory.
func (k *kubeFlags) files(ctx context.Context, sandbox, p, workdir string) (*filesClient, string, error) {
	cfg, ns, err := k.config()
	if err != nil {
		return nil, "", err
	}
	c, err := newFilesClient(cfg, ns, sandbox)
	if err != nil {
		return nil, "", err
	}
	if path.IsAbs(p) {
		return c, p, nil
	}
	if workdir == "" {
		_, sbx, err := k.sandbox(ctx, sandbox)
		if err != nil {
			return nil, "", err
		}
		workdir = filesclient.WorkingDir(sbx)
	}
	if !path.IsAbs(workdir) {
		return nil, "", usageError("--workdir %q is not absolute", workdir)
	}
	abs := path.Join(workdir, p)
	if strings.HasSuffix(p, "/") {
		abs += "/"
	}
	return c, abs, nil
}

func copyIn(ctx context.Context, c *filesClient, req copyRequest) error {
	if req.local == "-" {
		dst, err := intoDir(ctx, c, req.remote, "stdin")
		if err != nil {
			return err
		}
		return c.put(ctx, dst, os.Stdin, -1, "", false)
	}
	st, err := os.Stat(req.local)
	if err != nil {
		return fmt.Errorf("reading what to copy in: %w", err)
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		return notCopyable(req.local, st.Mode()) // a pipe's open would wait for a writer
	}
	dst, err := intoDir(ctx, c, req.remote, filepath.Base(req.local))
	if err != nil {
		return err
	}
	if st.IsDir() {
		if err := c.mkdirAll(ctx, dst); err != nil {
			return err
		}
		return c.put(ctx, dst, tarOfDir(req.local), -1, "", true)
	}
	f, st, err := openRegular(req.local, true)
	if err != nil {
		return fmt.Errorf("reading what to copy in: %w", err)
	}
	defer f.Close()
	return c.put(ctx, dst, f, st.Size(), fmt.Sprintf("%04o", st.Mode().Perm()), false)
}

// intoDir is where a copy in lands: under name in remote when remote is a directory (or ends in "/"),
// else remote itself.
func intoDir(ctx context.Context, c *filesClient, remote, name string) (string, error) {
	if strings.HasSuffix(remote, "/") {
		return path.Join(remote, name), nil
	}
	info, err := c.stat(ctx, remote)
	switch {
	case isNotFound(err):
		return remote, nil
	case err != nil:
		return "", err
	case info.Type == "dir" || (info.Type == "symlink" && isRemoteDir(ctx, c, info.Link)):
		return path.Join(remote, name), nil
	}
	return remote, nil
}

func isRemoteDir(ctx context.Context, c *filesClient, p string) bool {
	info, err := c.stat(ctx, p)
	return err == nil && info.Type == "dir"
}

func copyOut(ctx context.Context, c *filesClient, req copyRequest) error {
	info, err := c.stat(ctx, req.remote)
	if err != nil {
		return err
	}
	dir := info.Type == "dir" || (info.Type == "symlink" && isRemoteDir(ctx, c, info.Link))
	body, err := c.get(ctx, req.remote, dir)
	if err != nil {
		return err
	}
	defer body.Close()
	if req.local == "-" {
		if _, err := io.Copy(os.Stdout, body); err != nil {
			return fmt.Errorf("copying %s:%s to standard output: %w", req.sandbox, req.remote, err)
		}
		return nil
	}
	dst := req.local
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		dst = filepath.Join(dst, path.Base(req.remote))
	}
	if dir {
		return extractTar(body, dst)
	}
	return writeLocal(dst, body, fileModeOf(info.Mode))
}

// writeLocal writes a copied file atomically: a temporary file beside dst, renamed over it once whole (r
// ends with io.EOF only once the agent said the file arrived whole).
func writeLocal(dst string, r io.Reader, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".dockside-*")
	if err != nil {
		return fmt.Errorf("writing the copy: %w", err)
	}
	n, err := io.Copy(tmp, r)
	if err != nil {
		err = fmt.Errorf("the copy of %s broke off after %d bytes: %w", dst, n, err)
	}
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		err = fmt.Errorf("writing the copy of %s: %w", dst, err)
	}
	if err == nil {
		if err = os.Rename(tmp.Name(), dst); err != nil {
			err = fmt.Errorf("putting the copy in place: %w", err)
		}
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// fileModeOf parses the octal permission bits files reports, 0644 if it cannot.
func fileModeOf(s string) fs.FileMode {
	var m uint32
	if _, err := fmt.Sscanf(s, "%o", &m); err != nil || m > 0o777 {
		return 0o644
	}
	return fs.FileMode(m)
}
