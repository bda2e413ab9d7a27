package helper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"sync"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// rootSet is a set of confinement roots; each session registers it once.
type rootSet struct {
	roots    []ops.Root // as resolved by the first registration
	requests []ops.Root // as given
}

// Confine returns a view whose file operations the helper confines to
// roots in the target, resolving and using each path in one step. It
// fails with ops.ErrUnsupported when the helper cannot confine.
func (cl *Client) Confine(ctx context.Context, roots []ops.Root) (ops.Backend, error) {
	if len(roots) == 0 {
		return nil, errors.New("helper: confinement needs at least one root")
	}
	rs := &rootSet{requests: slices0(roots)}
	if _, _, err := cl.c.setID(ctx, rs); err != nil {
		return nil, err
	}
	return &Client{c: cl.c, set: rs}, nil
}

func slices0(r []ops.Root) []ops.Root { return append([]ops.Root(nil), r...) }

// Roots returns the resolved roots of a confined view (nil when unconfined).
func (cl *Client) Roots() []ops.Root {
	if cl.set == nil {
		return nil
	}
	return slices0(cl.set.roots)
}

// setID returns rs's id in the current session, registering it there.
func (c *conn) setID(ctx context.Context, rs *rootSet) (*session, int, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, 0, err
	}
	if rs == nil {
		return s, 0, nil
	}
	s.mu.Lock()
	id, ok := s.sets[rs]
	s.mu.Unlock()
	if ok {
		return s, id, nil
	}
	var reply proto.RootsReply
	if err := s.callJSON(ctx, c, proto.PathRoots, proto.RootsRequest{Roots: rs.requests}, &reply); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	s.sets[rs] = reply.ID
	s.mu.Unlock()
	rootsMu.Lock()
	if rs.roots == nil {
		rs.roots = reply.Roots
	}
	rootsMu.Unlock()
	return s, reply.ID, nil
}

var rootsMu sync.Mutex

func (cl *Client) roots() []ops.Root {
	if cl.set == nil {
		return nil
	}
	rootsMu.Lock()
	defer rootsMu.Unlock()
	return cl.set.roots
}

// call sends one request; release must be called when the response body
// is no longer needed.
func (cl *Client) call(ctx context.Context, path string, req any, header bool, body io.Reader) (*http.Response, func(), error) {
	c := cl.c
	if err := c.acquire(ctx); err != nil {
		return nil, nil, err
	}
	s, id, err := c.setID(ctx, cl.set)
	if err != nil {
		c.release()
		return nil, nil, err
	}
	setRoots(req, id)
	data, err := json.Marshal(req)
	if err != nil {
		c.release()
		return nil, nil, err
	}
	hdr := ""
	if header {
		hdr = string(data)
	} else {
		body = bytes.NewReader(data)
	}
	resp, err := s.roundTrip(ctx, c, path, hdr, body)
	if err != nil {
		c.release()
		return nil, nil, err
	}
	if resp.StatusCode == proto.StatusError {
		err := replyError(resp, cl.roots())
		c.release()
		return nil, nil, err
	}
	var once sync.Once
	return resp, func() { once.Do(func() { resp.Body.Close(); c.release() }) }, nil
}

func setRoots(req any, id int) {
	switch r := req.(type) {
	case *proto.FSRequest:
		r.Roots = id
	case *proto.EditRequest:
		r.Roots = id
	case *proto.SearchRequest:
		r.Roots = id
	case *proto.RunRequest:
		r.Roots = id
	}
}

// fsCall runs one JSON file operation.
func (cl *Client) fsCall(ctx context.Context, req *proto.FSRequest) (*proto.FSReply, error) {
	return cl.fsCallMax(ctx, req, MaxReply)
}

// fsCallMax is fsCall with a reply of at most max bytes (a listing's).
func (cl *Client) fsCallMax(ctx context.Context, req *proto.FSRequest, max int64) (*proto.FSReply, error) {
	resp, release, err := cl.call(ctx, proto.PathFS, req, false, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	var reply proto.FSReply
	if err := decodeReplyMax(resp.Body, "fs reply", max, &reply); err != nil {
		return nil, cl.bodyErr(ctx, err)
	}
	return &reply, nil
}

// bodyErr reports a reply body that broke off. A reply over its bound ends
// the session.
func (cl *Client) bodyErr(ctx context.Context, err error) error {
	c := cl.c
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	le := limitErr(err)
	if le == nil && s != nil {
		le = s.overBound(nil)
	}
	if le != nil {
		if s != nil {
			s.kill(le)
		}
		return c.explain(c.errorf("helper: %w", le))
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return c.explain(c.errorf("helper reply: %w: %w", ops.ErrTransport, err))
}

func (cl *Client) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	r, err := cl.fsCall(ctx, &proto.FSRequest{Op: "stat", Path: proto.Str(name)})
	if err != nil {
		return nil, err
	}
	return r.Info.FileInfo(), nil
}

func (cl *Client) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	r, err := cl.fsCall(ctx, &proto.FSRequest{Op: "lstat", Path: proto.Str(name)})
	if err != nil {
		return nil, err
	}
	return r.Info.FileInfo(), nil
}

func (cl *Client) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	r, err := cl.fsCallMax(ctx, &proto.FSRequest{Op: "readdir", Path: proto.Str(name)}, MaxListReply)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(r.Entries))
	for i, e := range r.Entries {
		out[i] = e.FileInfo().(fs.DirEntry)
	}
	return out, nil
}

// ListDir stats and lists name, with what each link leads to, in one
// round trip (ops.ListFS).
func (cl *Client) ListDir(ctx context.Context, name string) (fs.FileInfo, []ops.ListEntry, error) {
	r, err := cl.fsCallMax(ctx, &proto.FSRequest{Op: "listdir", Path: proto.Str(name)}, MaxListReply)
	if err != nil {
		return nil, nil, err
	}
	if r.Info == nil {
		return nil, nil, cl.c.errorf("helper: listdir %s: %w", name, ops.ErrUnsupported)
	}
	out := make([]ops.ListEntry, len(r.Entries))
	for i, e := range r.Entries {
		out[i] = ops.ListEntry{Name: string(e.Name), Mode: e.Mode, OK: true}
	}
	for _, t := range r.Targets {
		if t.Index >= 0 && t.Index < len(out) {
			out[t.Index].Mode, out[t.Index].OK = t.Mode, !t.Failed
		}
	}
	return r.Info.FileInfo(), out, nil
}

func (cl *Client) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	_, err := cl.fsCall(ctx, &proto.FSRequest{Op: "mkdir", Path: proto.Str(name), Perm: uint32(perm)})
	return err
}

func (cl *Client) RealPath(ctx context.Context, name string) (string, error) {
	r, err := cl.fsCall(ctx, &proto.FSRequest{Op: "realpath", Path: proto.Str(name)})
	if err != nil {
		return "", err
	}
	return string(r.Path), nil
}

func (cl *Client) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	_, err := cl.fsCall(ctx, &proto.FSRequest{Op: "access", Path: proto.Str(name), Mode: uint32(mode)})
	return err
}

func (cl *Client) Remove(ctx context.Context, name string) error {
	_, err := cl.fsCall(ctx, &proto.FSRequest{Op: "remove", Path: proto.Str(name)})
	return err
}

// CountLines counts newlines in the target.
func (cl *Client) CountLines(ctx context.Context, name string) (int64, int64, error) {
	r, err := cl.fsCall(ctx, &proto.FSRequest{Op: "countlines", Path: proto.Str(name)})
	if err != nil {
		return 0, 0, err
	}
	return r.Newlines, r.Size, nil
}

// Open streams name's content; closing the reader early stops the transfer.
func (cl *Client) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	resp, release, err := cl.call(ctx, proto.PathRead, &proto.FSRequest{Op: "read", Path: proto.Str(name)}, true, nil)
	if err != nil {
		return nil, err
	}
	return &reader{cl: cl, ctx: ctx, name: name, body: resp.Body, release: release}, nil
}

// OpenChecked checks, stats and opens name in one round trip
// (ops.CheckedOpenFS).
func (cl *Client) OpenChecked(ctx context.Context, name string, mode ops.AccessMode) (fs.FileInfo, io.ReadCloser, error) {
	resp, release, err := cl.call(ctx, proto.PathRead, &proto.FSRequest{Op: "read", Path: proto.Str(name), Mode: uint32(mode), Check: true}, true, nil)
	if err != nil {
		return nil, nil, err
	}
	var fi proto.FileInfo
	if err := json.Unmarshal([]byte(resp.Header.Get(proto.HeaderInfo)), &fi); err != nil {
		// A helper that does not check (another build): the caller takes
		// the steps one by one.
		release()
		return nil, nil, cl.c.errorf("helper: checked open of %s: %w", name, ops.ErrUnsupported)
	}
	if resp.StatusCode == http.StatusNoContent {
		release()
		return fi.FileInfo(), nil, nil
	}
	return fi.FileInfo(), &reader{cl: cl, ctx: ctx, name: name, body: resp.Body, release: release}, nil
}

type reader struct {
	cl      *Client
	ctx     context.Context
	name    string
	body    io.Reader
	release func()
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if err != nil && err != io.EOF {
		err = r.cl.bodyErr(r.ctx, fmt.Errorf("read %s: %w", r.name, err))
	}
	return n, err
}

func (r *reader) Close() error { r.release(); return nil }

// WriteFile replaces name atomically in the target.
func (cl *Client) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	req := &proto.FSRequest{Op: "write", Path: proto.Str(name), Perm: uint32(perm), Size: int64(len(data))}
	_, release, err := cl.call(ctx, proto.PathWrite, req, true, bytes.NewReader(data))
	if err != nil {
		return err
	}
	release()
	return nil
}

// WriteFileParents makes the parents, checks the target and writes in one
// round trip (ops.WriteParentsFS).
func (cl *Client) WriteFileParents(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	req := &proto.FSRequest{Op: "write", Path: proto.Str(name), Perm: uint32(perm), Size: int64(len(data)), Parents: true}
	_, release, err := cl.call(ctx, proto.PathWrite, req, true, bytes.NewReader(data))
	if err != nil {
		return err
	}
	release()
	return nil
}

// ReplaceFile writes data to name if its content is still old, under a lock
// in the target (ops.ReplaceFS).
func (cl *Client) ReplaceFile(ctx context.Context, name string, old, data []byte) error {
	sum := sha256.Sum256(old)
	req := &proto.EditRequest{Path: proto.Str(name), Expect: hex.EncodeToString(sum[:]), New: data}
	_, release, err := cl.call(ctx, proto.PathEdit, req, false, nil)
	if err != nil {
		return err
	}
	release()
	return nil
}

// OpenWriter streams a write to name. The open happens in the target before
// OpenWriter returns; Close reports the outcome of the whole write.
func (cl *Client) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	pr, pw := io.Pipe()
	req := &proto.FSRequest{Op: "write", Path: proto.Str(name), Flag: flag & (os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND), Perm: uint32(perm), Stream: true}
	resp, release, err := cl.call(ctx, proto.PathWrite, req, true, pr)
	if err != nil {
		pw.CloseWithError(err)
		return nil, err
	}
	return &writer{cl: cl, ctx: ctx, pw: pw, resp: resp, release: release}, nil
}

type writer struct {
	cl      *Client
	ctx     context.Context
	pw      *io.PipeWriter
	resp    *http.Response
	release func()
	once    sync.Once
	err     error
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.pw.Write(p)
	if err != nil {
		// The stream ended early: Close has the reason.
		if cerr := w.Close(); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

func (w *writer) Close() error {
	w.once.Do(func() {
		w.pw.Close()
		defer w.release()
		var st proto.WriteStatus
		if err := decodeReply(w.resp.Body, "write status", &st); err != nil {
			w.err = w.cl.bodyErr(w.ctx, err)
			return
		}
		w.err = st.Err.Err(w.cl.roots())
	})
	return w.err
}
