package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
)

const lsUsage = `Usage: kubectl dockside ls [flags] SANDBOX [PATH]

Lists a directory of a Sandbox's primary container through the API server's files subresource (RBAC: get on
sandboxes/files), one entry a line: mode, size in bytes, modification time (UTC), name, and a symlink's target;
a PATH that is not a directory is listed alone. PATH defaults to --workdir, else the Sandbox's workingDir,
else its workspace; a relative PATH is taken from there.
Exit codes: 0 listed, 1 the listing failed (the reason is printed), 2 usage.
`

func lsVerb() verb {
	k := &kubeFlags{}
	var workdir string
	return verb{
		usage: lsUsage, minArgs: 1, maxArgs: 2,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			fs.StringVar(&workdir, "workdir", "", "absolute directory a relative PATH is taken from")
			fs.StringVar(&workdir, "w", "", "shorthand for --workdir")
		},
		run: func(ctx context.Context, args []string) error {
			p := "."
			if len(args) == 2 {
				p = args[1]
			}
			c, abs, err := k.files(ctx, args[0], p, workdir)
			if err != nil {
				return err
			}
			return list(ctx, c, abs, os.Stdout)
		},
	}
}

func list(ctx context.Context, c *filesClient, p string, out io.Writer) error {
	info, err := c.stat(ctx, p)
	if err != nil {
		return err
	}
	items := []remoteInfo{info}
	if info.Type == "dir" || (info.Type == "symlink" && isRemoteDir(ctx, c, info.Link)) {
		if items, err = c.list(ctx, path.Clean(p)); err != nil {
			return err
		}
	}
	for _, it := range items {
		name := it.Name
		if it.Type == "symlink" {
			name += " -> " + it.Link
		}
		if _, err := fmt.Fprintf(out, "%s %12d %s %s\n", typeLetter(it.Type)+permString(it.Mode), it.Size, it.Mtime.Format("2006-01-02 15:04:05"), name); err != nil {
			return fmt.Errorf("writing the listing: %w", err)
		}
	}
	return nil
}

func typeLetter(t string) string {
	switch t {
	case "dir":
		return "d"
	case "symlink":
		return "l"
	case "file":
		return "-"
	}
	return "?"
}

// permString is ls -l's rwx form of octal permission bits.
func permString(octal string) string {
	m := fileModeOf(octal)
	const rwx = "rwxrwxrwx"
	out := []byte("---------")
	for i := range 9 {
		if m&(1<<(8-i)) != 0 {
			out[i] = rwx[i]
		}
	}
	return string(out)
}
