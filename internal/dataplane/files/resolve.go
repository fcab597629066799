package files

import (
	"context"
	"path"
	"strings"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// node is a path resolved in the container and what is there, if anything.
type node struct {
	path string
	stat *dd.PathStat // nil: nothing is there
}

// resolve follows the symlinks of p inside the container's root, one component at a time through the
// archive API's stat (whose LinkTarget is already resolved in the container's root, so a link to / or
// to /proc leads to the container's own, never the host's). The last component is followed only with
// followLast; a missing component ends the walk, the rest appended as it is. What the walk ends on is checked
// against the refused places, so a link into the secret files is refused like the path itself.
//
// A process in the container may swap a component for a link after the walk; the daemon resolves the path
// again in the container's root, so the swap reaches only what that process could reach itself.
func (h *Handler) resolve(ctx context.Context, t Target, p string, followLast bool) (node, error) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if p == "/" {
		parts = nil
	}
	cur := node{path: "/", stat: &dd.PathStat{Name: "/", Mode: dirMode}}
	for i, part := range parts {
		next := path.Join(cur.path, part)
		if err := refused(next); err != nil {
			return node{}, err
		}
		st, err := h.statPath(ctx, t, next)
		if dd.IsNotFound(err) {
			missing := path.Join(append([]string{next}, parts[i+1:]...)...)
			return node{path: missing}, refused(missing)
		}
		if err != nil {
			return node{}, driverError(err, t)
		}
		if st.LinkTarget == "" || (i == len(parts)-1 && !followLast) {
			cur = node{path: next, stat: &st}
			continue
		}
		target := path.Clean("/" + st.LinkTarget)
		if err := refused(target); err != nil {
			return node{}, err
		}
		tst, err := h.statPath(ctx, t, target)
		switch {
		case dd.IsNotFound(err):
			missing := path.Join(append([]string{target}, parts[i+1:]...)...)
			return node{path: missing}, refused(missing)
		case err != nil:
			return node{}, driverError(err, t)
		}
		cur = node{path: target, stat: &tst}
	}
	return cur, refused(cur.path)
}
