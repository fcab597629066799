package e2b

import (
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
)

// writtenEntry is one entry of the answer to POST /files (envd's EntryInfo).
type writtenEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

// envdError answers err in envd's error shape ({code, message}) with the code the SDKs map: 404 is their
// FileNotFoundException, 400 InvalidArgumentException, 401 AuthenticationException, 507 NotEnoughSpaceException.
func envdError(w http.ResponseWriter, err error) {
	code := codeOf(err)
	var ae *apiError
	if errors.As(err, &ae) {
		code = ae.Code
	}
	if code == 0 {
		code = http.StatusBadGateway
	}
	writeJSON(w, code, &apiError{Code: code, Message: err.Error()})
}

// files serves GET /files (a file's bytes) and POST /files (octet-stream or multipart uploads).
func (g *Gateway) files(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, p, err := g.target(ctx)
	if err != nil {
		envdError(w, err)
		return
	}
	if r.Method == http.MethodGet {
		abs, err := absolute(ctx, c, p.name, r.URL.Query().Get("path"))
		if err != nil {
			envdError(w, err)
			return
		}
		started := false
		err = p.read(ctx, abs, func() io.Writer {
			started = true
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(abs)}))
			w.WriteHeader(http.StatusOK)
			return w
		})
		switch {
		case err != nil && !started:
			envdError(w, err)
		case !started:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.WriteHeader(http.StatusOK)
		}
		return
	}
	entries, err := g.upload(r, c, p)
	if err != nil {
		envdError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, entries)
}

// upload writes the body of POST /files: one octet-stream to ?path, or each part of a multipart form to
// ?path (one part) or to its file name.
func (g *Gateway) upload(r *http.Request, c *caller, p *sandboxPlane) ([]writtenEntry, error) {
	ctx := r.Context()
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "the body is not gzip: %v", err)
		}
		body = zr
	}
	one := func(target string, data io.Reader) (writtenEntry, error) {
		abs, err := absolute(ctx, c, p.name, target)
		if err != nil {
			return writtenEntry{}, err
		}
		if err := p.mkdir(ctx, path.Dir(abs)); err != nil {
			return writtenEntry{}, err
		}
		if err := p.write(ctx, abs, data); err != nil {
			return writtenEntry{}, err
		}
		return writtenEntry{Name: path.Base(abs), Type: "file", Path: abs}, nil
	}
	target := r.URL.Query().Get("path")
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		e, err := one(target, body)
		if err != nil {
			return nil, err
		}
		return []writtenEntry{e}, nil
	}
	mr := multipart.NewReader(body, params["boundary"])
	var out []writtenEntry
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, errorf(http.StatusBadRequest, "reading the multipart body: %v", err)
		}
		name := target
		if name == "" || len(out) > 0 {
			name = fileNameOf(part)
		}
		if name == "" {
			return out, errorf(http.StatusBadRequest, "a part names no file: give ?path= or the part's filename")
		}
		e, err := one(name, part)
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, errorf(http.StatusBadRequest, "the multipart body holds no file")
	}
	return out, nil
}

// envs serves GET /envs: the environment every command of the Sandbox gets (its commandEnv).
func (g *Gateway) envs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, p, err := g.target(ctx)
	if err != nil {
		envdError(w, err)
		return
	}
	sbx, err := sandboxOf(ctx, c, p.name)
	if err != nil {
		envdError(w, err)
		return
	}
	out := map[string]string{}
	for _, e := range sbx.Spec.CommandEnv {
		out[e.Name] = e.Value
	}
	writeJSON(w, http.StatusOK, out)
}

// fileNameOf is a part's file name as sent: the SDKs send the file's full path there, which Part.FileName
// cuts to its last element.
func fileNameOf(part *multipart.Part) string {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}
