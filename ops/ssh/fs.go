package sshops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pkg/sftp"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// do runs fn with a live SFTP client, bounded by ctx. SFTP requests have no
// ctx of their own; a request abandoned on cancel finishes in the background.
//
// A call that fails because the connection was already dead (dropped but not
// yet noticed), or its SFTP server was, is tried once more on a new one: file
// operations here are idempotent or atomic, so a repeat is harmless.
func (b *Backend) do(ctx context.Context, fn func(sc *sftp.Client, c *conn) error) error {
	c, err := b.do1(ctx, fn)
	if err == nil || !errors.Is(err, ops.ErrTransport) || c == nil || ctx.Err() != nil {
		return err
	}
	if b.pool.waitDead(c, 300*time.Millisecond) {
		if b.pool.dial == nil {
			return err
		}
	} else {
		// The connection lives but its SFTP server is gone (killed,
		// crashed): start another.
		b.pool.dropSFTP(c)
	}
	_, err = b.do1(ctx, fn)
	return err
}

func (b *Backend) do1(ctx context.Context, fn func(sc *sftp.Client, c *conn) error) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	sc, c, err := b.pool.sftpClient(ctx)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- fn(sc, c) }()
	select {
	case err := <-done:
		return c, err
	case <-ctx.Done():
		return c, context.Cause(ctx)
	case <-c.dead:
		// The request may still be answered from a buffer; prefer that.
		select {
		case err := <-done:
			return c, err
		default:
			return c, b.pool.transportErr("sftp", nil)
		}
	}
}

// Open opens name for a streaming read.
func (b fallback) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	var rf *readFile
	err := b.do(ctx, func(sc *sftp.Client, c *conn) error {
		fi, err := sc.Stat(name)
		if err != nil {
			return b.pathErr("open", name, err, c, sc, hintRead)
		}
		if fi.IsDir() {
			return ops.PathError("read", name, ops.EISDIR)
		}
		f, err := sc.Open(name)
		if err != nil {
			return b.pathErr("open", name, err, c, sc, hintRead)
		}
		rf = &readFile{remoteFile{b: b.Backend, ctx: ctx, f: f, c: c, sc: sc, name: name}}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rf, nil
}

// remoteFile is an open SFTP file with what mapping its errors needs.
type remoteFile struct {
	b    *Backend
	ctx  context.Context
	f    *sftp.File
	c    *conn
	sc   *sftp.Client
	name string
}

// pathErr maps an error of op on the file (see Backend.pathErr).
func (r *remoteFile) pathErr(op string, err error, hint failHint) error {
	return r.b.pathErr(op, r.name, err, r.c, r.sc, hint)
}

type readFile struct{ remoteFile }

func (r *readFile) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, context.Cause(r.ctx)
	}
	n, err := r.f.Read(p)
	if err != nil && err != io.EOF {
		err = r.pathErr("read", err, hintRead)
	}
	return n, err
}

// WriteTo lets io.Copy use the client's concurrent reads.
func (r *readFile) WriteTo(w io.Writer) (int64, error) {
	n, err := r.f.WriteTo(w)
	if err != nil {
		if ctxErr := r.ctx.Err(); ctxErr != nil {
			return n, context.Cause(r.ctx)
		}
		if fxCode(err) != 0 || isTransport(err, r.c) {
			err = r.pathErr("read", err, hintRead)
		}
	}
	return n, err
}

func (r *readFile) Close() error { r.f.Close(); return nil }

// OpenWriter opens name for a streaming write. Close syncs the data when the
// server offers fsync@openssh.com.
func (b fallback) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	var wf *writeFile
	hint := hintCreate
	if flag&os.O_EXCL != 0 {
		hint = hintExcl
	}
	err := b.do(ctx, func(sc *sftp.Client, c *conn) error {
		created := false
		if flag&os.O_CREATE != 0 {
			_, err := sc.Lstat(name)
			created = err != nil
		}
		f, err := sc.OpenFile(name, os.O_WRONLY|(flag&(os.O_CREATE|os.O_EXCL|os.O_TRUNC|os.O_APPEND)))
		if err != nil {
			return b.pathErr("open", name, err, c, sc, hint)
		}
		if created {
			f.Chmod(perm.Perm())
		}
		if flag&os.O_APPEND != 0 {
			// pkg/sftp writes at its own offset; start it at the end.
			if _, err := f.Seek(0, io.SeekEnd); err != nil {
				f.Close()
				return b.pathErr("open", name, err, c, sc, hint)
			}
		}
		wf = &writeFile{remoteFile{b: b.Backend, ctx: ctx, f: f, c: c, sc: sc, name: name}}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return wf, nil
}

type writeFile struct{ remoteFile }

func (w *writeFile) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, context.Cause(w.ctx)
	}
	n, err := w.f.Write(p)
	if err != nil {
		err = w.pathErr("write", err, hintCreate)
	}
	return n, err
}

func (w *writeFile) Close() error {
	syncErr := w.f.Sync()
	if fxCode(syncErr) == fxOpUnsupported {
		syncErr = nil
	}
	err := w.f.Close()
	if err == nil {
		err = syncErr
	}
	if err != nil {
		return w.pathErr("close", err, hintCreate)
	}
	return nil
}

// Stat follows symbolic links.
func (b fallback) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := b.do(ctx, func(sc *sftp.Client, c *conn) error {
		var err error
		fi, err = sc.Stat(name)
		return b.pathErr("stat", name, err, c, sc, hintNone)
	})
	return fi, err
}

// Lstat does not follow a final symbolic link.
func (b fallback) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := b.do(ctx, func(sc *sftp.Client, c *conn) error {
		var err error
		fi, err = sc.Lstat(name)
		return b.pathErr("lstat", name, err, c, sc, hintNone)
	})
	return fi, err
}

// ReadDir lists name sorted by name; entries are not followed.
func (b fallback) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	err := b.do(ctx, func(sc *sftp.Client, c *conn) error {
		infos, err := sc.ReadDirContext(ctx, name)
		if err != nil {
			return b.pathErr("scandir", name, err, c, sc, hintNone)
		}
		out = make([]fs.DirEntry, len(infos))
		for i, fi := range infos {
			out[i] = fs.FileInfoToDirEntry(fi)
		}
		slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		return nil
	})
	return out, err
}

// MkdirAll creates name and its missing parents.
func (b fallback) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	return b.do(ctx, func(sc *sftp.Client, c *conn) error { return b.mkdirAll(sc, c, name, perm) })
}

func (b *Backend) mkdirAll(sc *sftp.Client, c *conn, name string, perm fs.FileMode) error {
	fi, err := sc.Stat(name)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		return ops.PathError("mkdir", name, ops.ENOTDIR)
	}
	if fxCode(err) != fxNoSuchFile {
		return b.pathErr("mkdir", name, err, c, sc, hintMkdir)
	}
	if parent := path.Dir(name); parent != name {
		if err := b.mkdirAll(sc, c, parent, perm); err != nil {
			return err
		}
	}
	if err := sc.Mkdir(name); err != nil {
		if fi, serr := sc.Lstat(name); serr == nil && fi.IsDir() {
			return nil // made concurrently
		}
		return b.pathErr("mkdir", name, err, c, sc, hintMkdir)
	}
	if p := perm.Perm(); p != 0 && p != 0o755 && p != 0o777 {
		sc.Chmod(name, p)
	}
	return nil
}

// RealPath resolves name on the remote host; the last element may be
// missing.
func (b fallback) RealPath(ctx context.Context, name string) (string, error) {
	var out string
	err := b.do(ctx, func(sc *sftp.Client, c *conn) error {
		var err error
		out, err = b.realPath(sc, c, name, 0)
		return err
	})
	return out, err
}

func (b *Backend) realPath(sc *sftp.Client, c *conn, name string, depth int) (string, error) {
	if depth > 40 {
		return "", ops.PathError("realpath", name, ops.ELOOP)
	}
	if name == "/" {
		return "/", nil
	}
	r, err := sc.RealPath(name)
	if err == nil {
		return path.Clean(r), nil
	}
	if fxCode(err) != fxNoSuchFile || isTransport(err, c) {
		return "", b.pathErr("realpath", name, err, c, sc, hintNone)
	}
	// OpenSSH refuses a missing last element on some versions: resolve the
	// parent, then follow or append the last element.
	parent, base := path.Dir(name), path.Base(name)
	rp, err := b.realPath(sc, c, parent, depth)
	if err != nil {
		return "", err
	}
	if fi, err := sc.Stat(rp); err != nil {
		return "", b.pathErr("realpath", name, err, c, sc, hintNone)
	} else if !fi.IsDir() {
		return "", ops.PathError("realpath", name, ops.ENOTDIR)
	}
	full := path.Join(rp, base)
	fi, err := sc.Lstat(full)
	if err != nil {
		if fxCode(err) == fxNoSuchFile && !isTransport(err, c) {
			return full, nil
		}
		return "", b.pathErr("realpath", name, err, c, sc, hintNone)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return full, nil
	}
	t, err := sc.ReadLink(full)
	if err != nil {
		return "", b.pathErr("realpath", name, err, c, sc, hintNone)
	}
	if !path.IsAbs(t) {
		t = path.Join(rp, t)
	}
	return b.realPath(sc, c, path.Clean(t), depth+1)
}

// Access checks mode against the file's permission bits and the user's
// uid and groups read at open: SFTP has no access(2). ACLs and security
// modules are not consulted; the operation that follows reports them.
func (b fallback) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	return b.do(ctx, func(sc *sftp.Client, c *conn) error {
		fi, err := sc.Stat(name)
		if err != nil {
			return b.pathErr("access", name, err, c, sc, hintNone)
		}
		if mode == ops.AccessExists {
			return nil
		}
		if !b.permits(fi, mode) {
			return ops.PathError("access", name, ops.EACCES)
		}
		if mode&ops.AccessWrite != 0 {
			if vfs, err := sc.StatVFS(name); err == nil && vfs.Flag&stRDOnly != 0 {
				return ops.PathError("access", name, ops.EROFS)
			}
		}
		return nil
	})
}

func (b *Backend) permits(fi fs.FileInfo, mode ops.AccessMode) bool {
	perm := uint32(fi.Mode().Perm())
	if b.info.UID == 0 {
		// root may read and write anything; exec needs one x bit (or a dir).
		return mode&ops.AccessExec == 0 || fi.IsDir() || perm&0o111 != 0
	}
	var shift uint
	st, ok := fi.Sys().(*sftp.FileStat)
	switch {
	case ok && int(st.UID) == b.info.UID:
		shift = 6
	case ok && slices.Contains(b.groups, int(st.GID)):
		shift = 3
	case !ok:
		return true // no owner information: let the operation decide
	}
	bits := (perm >> shift) & 7
	return uint32(mode)&bits == uint32(mode)
}

// Remove removes a file or an empty directory.
func (b fallback) Remove(ctx context.Context, name string) error {
	return b.do(ctx, func(sc *sftp.Client, c *conn) error {
		fi, err := sc.Lstat(name)
		if err != nil {
			return b.pathErr("rm", name, err, c, sc, hintRemove)
		}
		if fi.IsDir() {
			err = sc.RemoveDirectory(name)
		} else {
			err = sc.Remove(name)
		}
		if err != nil {
			var pe *fs.PathError
			if e, ok := err.(*fs.PathError); ok {
				pe = e
				err = pe.Err
			}
			return b.pathErr("rm", name, err, c, sc, hintRemove)
		}
		return nil
	})
}

// errNoPosixRename explains why WriteFile cannot be atomic on this server.
var errNoPosixRename = fmt.Errorf("sshops: the SFTP server lacks posix-rename@openssh.com, so files cannot be replaced atomically: %w", ops.ErrUnsupported)
