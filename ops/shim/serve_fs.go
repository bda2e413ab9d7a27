package shim

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
	"path"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/search"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// fsFor returns the file system of root set id (0: unconfined), or replies
// an error.
func (s *server) fsFor(w http.ResponseWriter, id int) ops.FS {
	fsys, err := s.lookupFS(id)
	if err != nil {
		replyErr(w, err)
		return nil
	}
	return fsys
}

func (s *server) lookupFS(id int) (ops.FS, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b == nil {
		return nil, errors.New("shim: no hello yet")
	}
	if id == 0 {
		return s.b, nil
	}
	rs := s.sets[id]
	if rs == nil {
		return nil, fmt.Errorf("shim: no root set %d", id)
	}
	return rs.fs, nil
}

func (s *server) handleRoots(w http.ResponseWriter, r *http.Request) {
	var req proto.RootsRequest
	if !decode(w, r.Body, &req) {
		return
	}
	b := s.backend(w)
	if b == nil {
		return
	}
	rs, err := openRootSet(b, req.Roots)
	if err != nil {
		replyErr(w, err)
		return
	}
	s.mu.Lock()
	s.nextSet++
	id := s.nextSet
	s.sets[id] = rs
	s.mu.Unlock()
	writeJSON(w, proto.RootsReply{ID: id, Roots: rs.roots})
}

func (s *server) handleFS(w http.ResponseWriter, r *http.Request) {
	var req proto.FSRequest
	if !decode(w, r.Body, &req) {
		return
	}
	fsys := s.fsFor(w, req.Roots)
	if fsys == nil {
		return
	}
	ctx, name := r.Context(), string(req.Path)
	var reply proto.FSReply
	var err error
	switch req.Op {
	case "stat", "lstat":
		var fi fs.FileInfo
		if req.Op == "stat" {
			fi, err = fsys.Stat(ctx, name)
		} else {
			fi, err = fsys.Lstat(ctx, name)
		}
		if err == nil {
			i := proto.ToFileInfo(fi)
			reply.Info = &i
		}
	case "readdir", "listdir":
		if req.Op == "listdir" {
			// ls in one round trip: the directory's stat, the listing,
			// and what each link leads to.
			var fi fs.FileInfo
			if fi, err = fsys.Stat(ctx, name); err != nil {
				break
			}
			i := proto.ToFileInfo(fi)
			reply.Info = &i
		}
		var es []fs.DirEntry
		es, err = fsys.ReadDir(ctx, name)
		reply.Entries = make([]proto.FileInfo, 0, len(es))
		for _, e := range es {
			fi, ierr := e.Info()
			if ierr != nil {
				// Gone since the listing: report what the listing knew.
				reply.Entries = append(reply.Entries, proto.FileInfo{Name: proto.Str(e.Name()), Mode: e.Type()})
			} else {
				reply.Entries = append(reply.Entries, proto.ToFileInfo(fi))
			}
			if req.Op == "listdir" && e.Type()&fs.ModeSymlink != 0 {
				t := proto.LinkTarget{Index: len(reply.Entries) - 1}
				if ti, serr := fsys.Stat(ctx, path.Join(name, e.Name())); serr == nil {
					t.Mode = ti.Mode()
				} else {
					t.Failed = true
				}
				reply.Targets = append(reply.Targets, t)
			}
		}
	case "mkdir":
		err = fsys.MkdirAll(ctx, name, fs.FileMode(req.Perm))
	case "realpath":
		var p string
		p, err = fsys.RealPath(ctx, name)
		reply.Path = proto.Str(p)
	case "access":
		err = fsys.Access(ctx, name, ops.AccessMode(req.Mode))
	case "remove":
		err = fsys.Remove(ctx, name)
	case "countlines":
		reply.Newlines, reply.Size, err = ops.CountLines(ctx, fsys, name)
	default:
		err = fmt.Errorf("shim: unknown file operation %q", req.Op)
	}
	if err != nil {
		replyErr(w, err)
		return
	}
	writeJSON(w, reply)
}

// requestHeader decodes the JSON request of a raw-body endpoint.
func requestHeader(w http.ResponseWriter, r *http.Request) (proto.FSRequest, bool) {
	var req proto.FSRequest
	if err := json.Unmarshal([]byte(r.Header.Get(proto.HeaderRequest)), &req); err != nil {
		replyErr(w, fmt.Errorf("shim: bad request header: %w", err))
		return req, false
	}
	return req, true
}

// readBufs recycles handleRead's copy buffers (32 KiB a call otherwise).
var readBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (s *server) handleRead(w http.ResponseWriter, r *http.Request) {
	req, ok := requestHeader(w, r)
	if !ok {
		return
	}
	fsys := s.fsFor(w, req.Roots)
	if fsys == nil {
		return
	}
	ctx, name := r.Context(), string(req.Path)
	var f io.ReadCloser
	if cf, ok := fsys.(*confinedFS); ok && req.Check {
		if fi, rc, ok := cf.openRegular(ctx, name, ops.AccessMode(req.Mode)); ok {
			info, _ := json.Marshal(proto.ToFileInfo(fi))
			w.Header().Set(proto.HeaderInfo, string(info))
			f = rc
		}
	}
	if f == nil && req.Check {
		// One round trip for the read tool's access, stat and open.
		if err := fsys.Access(ctx, name, ops.AccessMode(req.Mode)); err != nil {
			replyErr(w, err)
			return
		}
		fi, err := fsys.Stat(ctx, name)
		if err != nil {
			replyErr(w, err)
			return
		}
		info, _ := json.Marshal(proto.ToFileInfo(fi))
		w.Header().Set(proto.HeaderInfo, string(info))
		if !fi.Mode().IsRegular() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if f == nil {
		var err error
		if f, err = fsys.Open(ctx, name); err != nil {
			replyErr(w, err)
			return
		}
	}
	defer f.Close()
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	// The first read decides between an error reply and a stream.
	n, rerr := f.Read(buf)
	if rerr != nil && rerr != io.EOF {
		replyErr(w, rerr)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	for {
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
		}
		if rerr == io.EOF {
			return
		}
		if rerr != nil {
			// A stream reset, so the client never takes a cut file for
			// the whole of it.
			panic(http.ErrAbortHandler)
		}
		if r.Context().Err() != nil {
			return
		}
		n, rerr = f.Read(buf)
	}
}

func (s *server) handleWrite(w http.ResponseWriter, r *http.Request) {
	req, ok := requestHeader(w, r)
	if !ok {
		return
	}
	fsys := s.fsFor(w, req.Roots)
	if fsys == nil {
		return
	}
	ctx, name := r.Context(), string(req.Path)
	if req.Stream {
		// The open's outcome is the reply's status, sent at once; the
		// write's outcome is the reply's body, once the client's body ends.
		wr, err := fsys.OpenWriter(ctx, name, req.Flag, fs.FileMode(req.Perm))
		if err != nil {
			replyErr(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		_, cerr := io.Copy(wr, r.Body)
		if err := wr.Close(); cerr == nil {
			cerr = err
		}
		json.NewEncoder(w).Encode(proto.WriteStatus{Err: proto.FromError(cerr)})
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, req.Size+1))
	if err != nil {
		replyErr(w, fmt.Errorf("shim: write %s: body: %w", name, err))
		return
	}
	if int64(len(data)) != req.Size {
		replyErr(w, fmt.Errorf("shim: write %s: got %d bytes, want %d", name, len(data), req.Size))
		return
	}
	if req.Parents {
		if err := fsys.MkdirAll(ctx, path.Dir(name), 0o755); err != nil {
			replyErr(w, err)
			return
		}
		if fi, err := fsys.Stat(ctx, name); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			replyErr(w, fmt.Errorf("shim: write %s: not a regular file (%v)", name, fi.Mode().Type()))
			return
		}
	}
	if err := fsys.WriteFile(ctx, name, data, fs.FileMode(req.Perm)); err != nil {
		replyErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleEdit replaces a file's content when it is still what the client
// read, under an exclusive flock of its directory: concurrent edits of one
// file, from this or another session, are serialised, and one that lost the
// race is told so instead of overwriting the other. The wait for the lock
// ends with the request (the call was aborted) or after lockWait (another
// process holds it); once the lock is held the edit runs to its end even
// when the request ends, so an edit under way when the abort came lands.
func (s *server) handleEdit(w http.ResponseWriter, r *http.Request) {
	var req proto.EditRequest
	if !decode(w, r.Body, &req) {
		return
	}
	fsys := s.fsFor(w, req.Roots)
	if fsys == nil {
		return
	}
	ctx, name := r.Context(), string(req.Path)
	real, err := fsys.RealPath(ctx, name)
	if err != nil {
		replyErr(w, err)
		return
	}
	unlock, err := lockDir(ctx, path.Dir(real), lockWait)
	if err != nil {
		replyErr(w, err)
		return
	}
	defer unlock()
	ctx = context.WithoutCancel(ctx)
	// Only a regular file is edited: a FIFO put in its place since the
	// client read it would hold the read for good.
	if fi, err := fsys.Stat(ctx, name); err != nil {
		replyErr(w, err)
		return
	} else if !fi.Mode().IsRegular() {
		replyErr(w, fmt.Errorf("shim: edit %s: not a regular file (%v)", name, fi.Mode().Type()))
		return
	}
	cur, err := ops.ReadFile(ctx, fsys, name)
	if err != nil {
		replyErr(w, err)
		return
	}
	sum := sha256.Sum256(cur)
	if hex.EncodeToString(sum[:]) != req.Expect {
		replyErr(w, &fs.PathError{Op: "edit", Path: name, Err: ops.ErrConflict})
		return
	}
	if bytes.Equal(cur, req.New) {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err := fsys.WriteFile(ctx, name, req.New, 0o666); err != nil {
		replyErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// lockWait bounds an edit's wait for its directory's lock: any process of
// the target can hold that flock (`flock DIR sleep 600`).
var lockWait = 10 * time.Second

// Pauses between two tries of the lock: short at first (edits of one
// directory hold it for milliseconds), then growing to lockPauseMax.
const (
	lockPauseMin = time.Millisecond
	lockPauseMax = 50 * time.Millisecond
)

// lockDir takes an exclusive flock on dir, trying without blocking until
// it gets it, ctx ends (ctx's error) or wait has passed (an
// *ops.LockedError). A directory that cannot be opened or locked for
// another reason is edited without the lock.
func lockDir(ctx context.Context, dir string, wait time.Duration) (func(), error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() {}, nil
	}
	deadline := time.Now().Add(wait)
	pause := lockPauseMin
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Flock(fd, unix.LOCK_UN); unix.Close(fd) }, nil
		}
		if err == unix.EINTR {
			continue
		}
		if err != unix.EWOULDBLOCK {
			unix.Close(fd)
			return func() {}, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			unix.Close(fd)
			return nil, &ops.LockedError{Dir: dir}
		}
		d := min(pause, left)
		pause = min(2*pause, lockPauseMax)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			unix.Close(fd)
			return nil, fmt.Errorf("shim: lock %s: %w", dir, context.Cause(ctx))
		}
	}
}

func (s *server) handleSearch(w http.ResponseWriter, r *http.Request) {
	var req proto.SearchRequest
	if !decode(w, r.Body, &req) {
		return
	}
	fsys := s.fsFor(w, req.Roots)
	if fsys == nil {
		return
	}
	if c, ok := fsys.(*confinedFS); ok {
		if p, err := c.pin(string(req.Path)); err == nil {
			fsys = p
		}
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	var err error
	if req.Find {
		err = search.FindFS(r.Context(), fsys, req.FindQuery(), func(rel string) error {
			return enc.Encode(proto.SearchLine{Rel: proto.Str(rel)})
		})
	} else {
		err = search.GrepFS(r.Context(), fsys, req.GrepQuery(), func(ev ops.GrepEvent) error {
			return enc.Encode(proto.SearchLine{Path: proto.Str(ev.Path), Line: ev.Line, Match: ev.Match, Text: ev.Text, Cut: ev.Truncated})
		})
	}
	enc.Encode(proto.SearchLine{Done: true, Err: proto.FromError(err)})
}
