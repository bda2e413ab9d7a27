package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Root is a directory the confined backend allows, on the target.
type Root = ops.Root

// OutsideRootError reports a path refused by confinement. It satisfies
// errors.Is(err, fs.ErrPermission) and tells the model which roots exist.
type OutsideRootError = ops.OutsideRootError

// Confine wraps b so that every file operation resolves its path on the
// target (symbolic links included) and requires it under one of roots. Write
// operations need a writable root. Commands are not confined by path rules,
// but their working directory must be under a root.
//
// The roots are resolved with b.RealPath first. The optional capabilities of
// b are kept, with their paths checked.
//
// A backend that confines in the target itself ([ops.Confiner], the
// helper) does so, race-free; any other gets the check-then-use wrapper.
func Confine(ctx context.Context, b ops.Backend, roots []Root) (ops.Backend, error) {
	if cf, ok := b.(ops.Confiner); ok {
		v, err := cf.Confine(ctx, roots)
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, ops.ErrUnsupported) {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	c := &confined{b: b}
	for _, r := range roots {
		if !path.IsAbs(r.Path) {
			return nil, fmt.Errorf("sandbox: root %q is not absolute", r.Path)
		}
		rp, err := b.RealPath(ctx, path.Clean(r.Path))
		if err != nil {
			return nil, fmt.Errorf("sandbox: root %s: %w", r.Path, err)
		}
		c.roots = append(c.roots, Root{Path: rp, ReadOnly: r.ReadOnly})
	}
	if len(c.roots) == 0 {
		return nil, errors.New("sandbox: confinement needs at least one root")
	}
	return c, nil
}

// errDangling: a path goes through a symbolic link that resolves nowhere.
var errDangling = errors.New("sandbox: dangling symbolic link")

type confined struct {
	b     ops.Backend
	roots []Root
}

var (
	_ ops.Backend     = (*confined)(nil)
	_ ops.GrepFS      = (*confined)(nil)
	_ ops.FindFS      = (*confined)(nil)
	_ ops.LineCountFS = (*confined)(nil)
)

// resolve returns where name leads on the target. With followLast false the
// last element is not followed (lstat, remove). A missing tail is appended
// to the deepest existing ancestor's real path.
func (c *confined) resolve(ctx context.Context, name string, followLast bool) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", ops.PathError("resolve", name, ops.EINVAL)
	}
	if !path.IsAbs(name) {
		return "", ops.PathError("resolve", name, ops.EINVAL)
	}
	name = path.Clean(name)
	if !followLast {
		if name == "/" {
			return "/", nil
		}
		dir, err := c.resolve(ctx, path.Dir(name), true)
		if err != nil {
			return "", err
		}
		return path.Join(dir, path.Base(name)), nil
	}
	rp, err := c.b.RealPath(ctx, name)
	if err == nil {
		return rp, nil
	}
	code := ops.ErrnoOf(err)
	if code != ops.ENOENT && code != ops.ENOTDIR {
		return "", err
	}
	// Walk up to the deepest existing ancestor; what is below it does not
	// exist, so it cannot be a symbolic link.
	rest := path.Base(name)
	for dir := path.Dir(name); ; dir = path.Dir(dir) {
		rp, err := c.b.RealPath(ctx, dir)
		if err == nil {
			// The first missing element may be a dangling symbolic link
			// the backend's RealPath did not follow.
			first, _, _ := strings.Cut(rest, "/")
			if _, err := c.b.Lstat(ctx, path.Join(rp, first)); err == nil {
				return "", errDangling
			}
			return path.Join(rp, rest), nil
		}
		if c := ops.ErrnoOf(err); c != ops.ENOENT && c != ops.ENOTDIR {
			return "", err
		}
		if dir == "/" {
			return "", err
		}
		rest = path.Join(path.Base(dir), rest)
	}
}

func (c *confined) check(ctx context.Context, name string, write, followLast bool) error {
	rp, err := c.resolve(ctx, name, followLast)
	if errors.Is(err, errDangling) {
		return &fs.PathError{Op: "confine", Path: name, Err: &OutsideRootError{Path: name, Resolved: "a dangling symbolic link", Roots: c.roots}}
	}
	if err != nil {
		return err
	}
	// A resolved path never ends in a symbolic link; one that does is a
	// dangling link the backend's RealPath appended unresolved (busybox
	// readlink cannot follow it), and a write would create its target
	// wherever it points.
	if write && followLast {
		if fi, err := c.b.Lstat(ctx, rp); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return &fs.PathError{Op: "confine", Path: name, Err: &OutsideRootError{Path: name, Resolved: "a dangling symbolic link", Roots: c.roots}}
		}
	}
	for _, r := range c.roots {
		if within(rp, r.Path) {
			if write && r.ReadOnly {
				return &fs.PathError{Op: "confine", Path: name, Err: &OutsideRootError{Path: name, Resolved: rp, Write: true, Roots: c.roots}}
			}
			return nil
		}
	}
	return &fs.PathError{Op: "confine", Path: name, Err: &OutsideRootError{Path: name, Resolved: rp, Roots: c.roots}}
}

func within(p, root string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

func (c *confined) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := c.check(ctx, name, false, true); err != nil {
		return nil, err
	}
	return c.b.Open(ctx, name)
}

func (c *confined) OpenWriter(ctx context.Context, name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	if err := c.check(ctx, name, true, true); err != nil {
		return nil, err
	}
	return c.b.OpenWriter(ctx, name, flag, perm)
}

func (c *confined) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := c.check(ctx, name, false, true); err != nil {
		return nil, err
	}
	return c.b.Stat(ctx, name)
}

func (c *confined) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := c.check(ctx, name, false, false); err != nil {
		return nil, err
	}
	return c.b.Lstat(ctx, name)
}

func (c *confined) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := c.check(ctx, name, false, true); err != nil {
		return nil, err
	}
	return c.b.ReadDir(ctx, name)
}

func (c *confined) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if err := c.check(ctx, name, true, true); err != nil {
		return err
	}
	return c.b.WriteFile(ctx, name, data, perm)
}

func (c *confined) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	if err := c.check(ctx, name, true, true); err != nil {
		return err
	}
	return c.b.MkdirAll(ctx, name, perm)
}

func (c *confined) RealPath(ctx context.Context, name string) (string, error) {
	if err := c.check(ctx, name, false, true); err != nil {
		return "", err
	}
	return c.b.RealPath(ctx, name)
}

func (c *confined) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	if err := c.check(ctx, name, mode&ops.AccessWrite != 0, true); err != nil {
		return err
	}
	return c.b.Access(ctx, name, mode)
}

func (c *confined) Remove(ctx context.Context, name string) error {
	if err := c.check(ctx, name, true, false); err != nil {
		return err
	}
	return c.b.Remove(ctx, name)
}

func (c *confined) Run(ctx context.Context, cmd *ops.Cmd) error {
	if err := c.checkDir(ctx, cmd); err != nil {
		return err
	}
	return c.b.Run(ctx, cmd)
}

// checkDir requires cmd's directory under a root: a *StartError else.
func (c *confined) checkDir(ctx context.Context, cmd *ops.Cmd) error {
	dir := cmd.Dir
	if dir == "" {
		dir = c.b.Info().WorkDir
	}
	if err := c.check(ctx, dir, false, true); err != nil {
		return &ops.StartError{Err: err}
	}
	return nil
}

func (c *confined) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	g, ok := c.b.(ops.GrepFS)
	if !ok {
		return ops.ErrUnsupported
	}
	if err := c.check(ctx, q.Path, false, true); err != nil {
		return err
	}
	return g.Grep(ctx, q, fn)
}

func (c *confined) Find(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
	f, ok := c.b.(ops.FindFS)
	if !ok {
		return ops.ErrUnsupported
	}
	if err := c.check(ctx, q.Path, false, true); err != nil {
		return err
	}
	return f.Find(ctx, q, fn)
}

func (c *confined) CountLines(ctx context.Context, name string) (int64, int64, error) {
	if err := c.check(ctx, name, false, true); err != nil {
		return 0, 0, err
	}
	return ops.CountLines(ctx, c.b, name)
}

func (c *confined) Info() ops.Info { return c.b.Info() }
func (c *confined) Close() error   { return c.b.Close() }
