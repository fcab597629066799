package mcpserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"path"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Encodings of a file's content in read_file and write_file.
const (
	encodingText   = "utf-8"
	encodingBase64 = "base64"
)

type pathInput struct {
	target
	Path string `json:"path" jsonschema:"an absolute path in the Sandbox, for example /workspace/main.py"`
}

type readOutput struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	Encoding string `json:"encoding" jsonschema:"utf-8 for text, base64 for anything else"`
	Content  string `json:"content"`
}

type writeInput struct {
	pathInput
	Content  string `json:"content" jsonschema:"the file's new content"`
	Encoding string `json:"encoding,omitempty" jsonschema:"utf-8 (the default) or base64"`
	Mode     string `json:"mode,omitempty" jsonschema:"permission bits in octal, for example 0755 (default 0644)"`
}

type writeOutput struct {
	Path string `json:"path"`
	Size int    `json:"size"`
}

type listOutput struct {
	Path    string     `json:"path"`
	Entries []FileInfo `json:"entries"`
	// Omitted counts the entries past MaxListEntries, which a model does not get: a directory of a million
	// files would fill its context and the host's memory.
	Omitted int `json:"omitted,omitempty" jsonschema:"entries left out: the directory holds more than this server lists"`
}

func (s *Server) addFileTools() {
	mcp.AddTool(s.Server, &mcp.Tool{
		Name:        "read_file",
		Description: fmt.Sprintf("Read a file of a Sandbox, as text or base64; at most %d bytes.", s.opts.MaxFileBytes),
	}, s.readFile)
	mcp.AddTool(s.Server, &mcp.Tool{
		Name:        "write_file",
		Description: "Write a file of a Sandbox (replaced whole, atomically), from text or base64; its directory must exist.",
	}, s.writeFile)
	mcp.AddTool(s.Server, &mcp.Tool{
		Name:        "list_files",
		Description: fmt.Sprintf("List a directory of a Sandbox: name, type, size, mode, modification time, a symlink's target; at most %d entries, the rest counted.", s.opts.MaxListEntries),
	}, s.listFiles)
}

// absolute refuses a relative path: the tools take no working directory, so a relative one would be a guess.
func absolute(p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("path %q is not absolute: give it from /, for example /workspace/%s", p, p)
	}
	return nil
}

func (s *Server) readFile(ctx context.Context, _ *mcp.CallToolRequest, in pathInput) (*mcp.CallToolResult, readOutput, error) {
	if err := absolute(in.Path); err != nil {
		return nil, readOutput{}, err
	}
	sbx, err := s.sandbox(ctx, in.target)
	if err != nil {
		return nil, readOutput{}, err
	}
	info, err := s.opts.DataPlane.Stat(ctx, sbx.Namespace, sbx.Name, in.Path)
	if err != nil {
		return nil, readOutput{}, fmt.Errorf("reading %s: %w", in.Path, err)
	}
	if info.Size > s.opts.MaxFileBytes {
		return nil, readOutput{}, fmt.Errorf("%s is %d bytes, more than the %d read_file returns: read a part with run_command (head -c, tail -c, sed -n)", in.Path, info.Size, s.opts.MaxFileBytes)
	}
	body, err := s.opts.DataPlane.Read(ctx, sbx.Namespace, sbx.Name, in.Path)
	if err != nil {
		return nil, readOutput{}, fmt.Errorf("reading %s: %w", in.Path, err)
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, s.opts.MaxFileBytes+1))
	if err != nil {
		return nil, readOutput{}, fmt.Errorf("reading %s: %w", in.Path, err)
	}
	if int64(len(data)) > s.opts.MaxFileBytes {
		return nil, readOutput{}, fmt.Errorf("%s grew past the %d bytes read_file returns while it was read", in.Path, s.opts.MaxFileBytes)
	}
	out := readOutput{Path: in.Path, Size: int64(len(data)), Encoding: encodingText, Content: string(data)}
	if !utf8.Valid(data) {
		out.Encoding, out.Content = encodingBase64, base64.StdEncoding.EncodeToString(data)
	}
	return nil, out, nil
}

func (s *Server) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in writeInput) (*mcp.CallToolResult, writeOutput, error) {
	if err := absolute(in.Path); err != nil {
		return nil, writeOutput{}, err
	}
	data := []byte(in.Content)
	switch in.Encoding {
	case "", encodingText:
	case encodingBase64:
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return nil, writeOutput{}, fmt.Errorf("content is not base64: %w", err)
		}
	default:
		return nil, writeOutput{}, fmt.Errorf("encoding %q is neither utf-8 nor base64", in.Encoding)
	}
	if int64(len(data)) > s.opts.MaxFileBytes {
		return nil, writeOutput{}, fmt.Errorf("content is %d bytes, more than the %d write_file takes", len(data), s.opts.MaxFileBytes)
	}
	sbx, err := s.sandbox(ctx, in.target)
	if err != nil {
		return nil, writeOutput{}, err
	}
	if err := s.opts.DataPlane.Write(ctx, sbx.Namespace, sbx.Name, in.Path, data, in.Mode); err != nil {
		return nil, writeOutput{}, fmt.Errorf("writing %s: %w", in.Path, err)
	}
	return nil, writeOutput{Path: in.Path, Size: len(data)}, nil
}

func (s *Server) listFiles(ctx context.Context, _ *mcp.CallToolRequest, in pathInput) (*mcp.CallToolResult, listOutput, error) {
	if err := absolute(in.Path); err != nil {
		return nil, listOutput{}, err
	}
	sbx, err := s.sandbox(ctx, in.target)
	if err != nil {
		return nil, listOutput{}, err
	}
	entries, err := s.opts.DataPlane.List(ctx, sbx.Namespace, sbx.Name, in.Path)
	if err != nil {
		return nil, listOutput{}, fmt.Errorf("listing %s: %w", in.Path, err)
	}
	if entries == nil {
		entries = []FileInfo{} // an empty directory is an empty list, not null
	}
	out := listOutput{Path: in.Path, Entries: entries}
	if most := s.opts.MaxListEntries; most > 0 && len(entries) > most {
		out.Entries, out.Omitted = entries[:most], len(entries)-most
	}
	return nil, out, nil
}
