package e2b

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/dockside-dev/dockside/internal/e2b/envdapi/filesystem"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/filesystem/filesystemconnect"
)

// filesystemService serves envd's filesystem.Filesystem through the files subresource; its watchers look at
// directories through it too (watch.go).
type filesystemService struct {
	filesystemconnect.UnimplementedFilesystemHandler
	g *Gateway
}

// entryOf is E2B's EntryInfo of what the files subresource reports at p.
func entryOf(info fileInfo, p string) *filesystem.EntryInfo {
	mode, _ := strconv.ParseUint(info.Mode, 8, 32)
	fm := fs.FileMode(mode) & fs.ModePerm
	e := &filesystem.EntryInfo{
		Name: path.Base(p), Path: p, Size: info.Size, Mode: uint32(fm),
		ModifiedTime: timestamppb.New(info.Mtime),
	}
	switch info.Type {
	case "dir":
		e.Type = filesystem.FileType_FILE_TYPE_DIRECTORY
		fm |= fs.ModeDir
	case "symlink":
		e.Type = filesystem.FileType_FILE_TYPE_FILE
		fm |= fs.ModeSymlink
		link := info.Link
		e.SymlinkTarget = &link
	default:
		e.Type = filesystem.FileType_FILE_TYPE_FILE
	}
	e.Permissions = fm.String()
	return e
}

// at resolves an envd call's path: its caller, the Sandbox's data plane and the absolute path.
func (s *filesystemService) at(ctx context.Context, p string) (*sandboxPlane, string, error) {
	c, plane, err := s.g.target(ctx)
	if err != nil {
		return nil, "", connectError(err)
	}
	abs, err := absolute(ctx, c, plane.name, p)
	if err != nil {
		return nil, "", connectError(err)
	}
	return plane, abs, nil
}

func (s *filesystemService) Stat(ctx context.Context, req *connect.Request[filesystem.StatRequest]) (*connect.Response[filesystem.StatResponse], error) {
	p, abs, err := s.at(ctx, req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	info, err := p.stat(ctx, abs)
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&filesystem.StatResponse{Entry: entryOf(info, abs)}), nil
}

func (s *filesystemService) MakeDir(ctx context.Context, req *connect.Request[filesystem.MakeDirRequest]) (*connect.Response[filesystem.MakeDirResponse], error) {
	p, abs, err := s.at(ctx, req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	if _, err := p.stat(ctx, abs); err == nil {
		return nil, connect.NewError(connect.CodeAlreadyExists, errors.New(abs+" already exists"))
	} else if codeOf(err) != http.StatusNotFound {
		return nil, connectError(err)
	}
	if err := p.mkdir(ctx, abs); err != nil {
		return nil, connectError(err)
	}
	info, err := p.stat(ctx, abs)
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&filesystem.MakeDirResponse{Entry: entryOf(info, abs)}), nil
}

func (s *filesystemService) Move(ctx context.Context, req *connect.Request[filesystem.MoveRequest]) (*connect.Response[filesystem.MoveResponse], error) {
	p, src, err := s.at(ctx, req.Msg.GetSource())
	if err != nil {
		return nil, err
	}
	_, dst, err := s.at(ctx, req.Msg.GetDestination())
	if err != nil {
		return nil, err
	}
	if _, err := p.stat(ctx, src); err != nil {
		return nil, connectError(err)
	}
	code, stderr, err := p.run(ctx, []string{"mv", "-f", "--", src, dst})
	switch {
	case err != nil:
		return nil, connectError(err)
	case code != 0:
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New(strings.TrimSpace(stderr)))
	}
	info, err := p.stat(ctx, dst)
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&filesystem.MoveResponse{Entry: entryOf(info, dst)}), nil
}

// maxListed bounds a ListDir's answer, however deep it asks.
const maxListed = 100000

func (s *filesystemService) ListDir(ctx context.Context, req *connect.Request[filesystem.ListDirRequest]) (*connect.Response[filesystem.ListDirResponse], error) {
	p, abs, err := s.at(ctx, req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	depth := max(req.Msg.GetDepth(), 1)
	info, err := p.stat(ctx, abs)
	if err != nil {
		return nil, connectError(err)
	}
	if info.Type != "dir" && info.Type != "symlink" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New(abs+" is not a directory"))
	}
	out := &filesystem.ListDirResponse{}
	type dir struct {
		path  string
		level uint32
	}
	queue := []dir{{abs, 1}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		items, err := p.list(ctx, d.path)
		if err != nil {
			return nil, connectError(err)
		}
		for _, it := range items {
			child := path.Join(d.path, it.Name)
			out.Entries = append(out.Entries, entryOf(it, child))
			if len(out.Entries) > maxListed {
				return nil, connect.NewError(connect.CodeResourceExhausted, errors.New("the listing holds more than 100000 entries: ask for less depth"))
			}
			if it.Type == "dir" && d.level < depth {
				queue = append(queue, dir{child, d.level + 1})
			}
		}
	}
	return connect.NewResponse(out), nil
}

func (s *filesystemService) Remove(ctx context.Context, req *connect.Request[filesystem.RemoveRequest]) (*connect.Response[filesystem.RemoveResponse], error) {
	p, abs, err := s.at(ctx, req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	if err := p.remove(ctx, abs); err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&filesystem.RemoveResponse{}), nil
}
