package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// tarOfDir streams the directory dir as a tar archive of relative names: directories, regular files and
// symlinks (as links). Anything else (sockets, devices) is left out with a warning.
func tarOfDir(dir string) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil || rel == "." {
				return err //nolint:wrapcheck // wrapped below, with what was being read
			}
			if err := addEntry(tw, p, filepath.ToSlash(rel), d); err != nil {
				return fmt.Errorf("adding %s to the archive: %w", p, err)
			}
			return nil
		})
		if err == nil {
			err = tw.Close()
		}
		if err != nil {
			err = fmt.Errorf("reading %s: %w", dir, err)
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// addEntry adds one entry; its errors are wrapped by its caller, which names the entry.
//
//nolint:wrapcheck
func addEntry(tw *tar.Writer, p, name string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	link := ""
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	case !info.Mode().IsRegular() && !info.IsDir():
		warn("cp: leaving out %s: not a file, directory or link", p)
		return nil
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return err
	}
	hdr.Name = name
	if info.IsDir() {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, _, err := openRegular(p, false)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, io.LimitReader(f, hdr.Size)) // the header said the size: what it grew by is not sent
	return err
}

// extractTar extracts a tar stream into dir (made if missing) through an os.Root, so that no entry, and no
// link an entry made, reaches outside dir; hard links stay inside it too. Devices and the like are left out with a warning.
func extractTar(r io.Reader, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the archive broke off: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "/"))
		if name == "." {
			continue
		}
		if err := extractEntry(root, tr, hdr, name); err != nil {
			return fmt.Errorf("extracting %s into %s: %w", hdr.Name, dir, err)
		}
	}
}

// extractEntry extracts one entry; its errors are wrapped by its caller, which names the entry.
//
//nolint:wrapcheck
func extractEntry(root *os.Root, tr *tar.Reader, hdr *tar.Header, name string) error {
	if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(hdr.Mode).Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, 0o755); err != nil {
			return err
		}
		return root.Chmod(name, mode|0o700) // the owner keeps the right to fill it
	case tar.TypeReg:
		_ = root.Remove(name) // a link there is replaced, never followed
		f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, tr); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case tar.TypeSymlink:
		_ = root.Remove(name)
		return root.Symlink(hdr.Linkname, name)
	case tar.TypeLink:
		_ = root.Remove(name)
		return root.Link(path.Clean(hdr.Linkname), name)
	}
	warn("cp: leaving out %s: not a file, directory or link", hdr.Name)
	return nil
}
