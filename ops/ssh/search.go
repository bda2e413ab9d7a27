package sshops

import (
	"bytes"
	"context"
	"io/fs"
	"strconv"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/search"
)

var (
	_ ops.GrepFS      = (*Backend)(nil)
	_ ops.FindFS      = (*Backend)(nil)
	_ ops.LineCountFS = (*Backend)(nil)
)

// Grep searches on the remote host: through the shim's engine when it is
// installed, else rg; without either it returns ops.ErrUnsupported and
// search.Grep walks the files over SFTP.
func (b fallback) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return search.Remote{Runner: b, ShimPath: b.shimPath}.Grep(ctx, q, fn)
}

// Find finds files on the remote host: the shim's engine, else fd.
func (b fallback) Find(ctx context.Context, q *ops.FindQuery, fn func(rel string) error) error {
	return search.Remote{Runner: b, ShimPath: b.shimPath}.Find(ctx, q, fn)
}

// countRemoteMin is the size from which CountLines runs wc on the remote
// host: below it, streaming the file over SFTP costs less than a session
// (which goes through the login shell).
const countRemoteMin = 256 << 10

// CountLines counts the newlines of a large file on the remote host (wc -l)
// without transferring it; small files return ops.ErrUnsupported, so
// ops.CountLines streams them.
func (b fallback) CountLines(ctx context.Context, name string) (newlines, size int64, err error) {
	fi, err := b.Stat(ctx, name)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			pe.Op = "open"
		}
		return 0, 0, err
	}
	if fi.IsDir() {
		return 0, 0, ops.PathError("read", name, ops.EISDIR)
	}
	if fi.Size() < countRemoteMin {
		return 0, 0, ops.ErrUnsupported
	}
	var out bytes.Buffer
	if err := b.Run(ctx, &ops.Cmd{Command: "LC_ALL=C wc -l < " + shquote.Quote(name) + " && wc -c < " + shquote.Quote(name), Output: &out}); err != nil {
		if ctx.Err() != nil {
			return 0, 0, err
		}
		return 0, 0, ops.ErrUnsupported // the stream reports the real error
	}
	f := strings.Fields(out.String())
	if len(f) != 2 {
		return 0, 0, ops.ErrUnsupported
	}
	n, err1 := strconv.ParseInt(f[0], 10, 64)
	s, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, ops.ErrUnsupported
	}
	return n, s, nil
}
