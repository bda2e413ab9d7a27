package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func TestNodeError(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{ops.PathError("stat", "/w/nope.txt", ops.ENOENT), "ENOENT: no such file or directory, access '/w/nope.txt'"},
		{ops.PathError("open", "/x", ops.EACCES), "EACCES: permission denied, access '/w/nope.txt'"},
		{ops.PathError("open", "/x", ops.EISDIR), "EISDIR: illegal operation on a directory, access '/w/nope.txt'"},
		{ops.PathError("open", "/x", ops.ENOTDIR), "ENOTDIR: not a directory, access '/w/nope.txt'"},
		{ops.PathError("open", "/x", ops.EROFS), "EROFS: read-only file system, access '/w/nope.txt'"},
		{ops.PathError("open", "/x", ops.ENOSPC), "ENOSPC: no space left on device, access '/w/nope.txt'"},
		{ops.PathError("open", "/x", ops.EEXIST), "EEXIST: file already exists, access '/w/nope.txt'"},
		{ops.PathError("open", "/x", ops.ELOOP), "ELOOP: too many symbolic links encountered, access '/w/nope.txt'"},
		{ops.PathError("open", "/x", ops.ENAMETOOLONG), "ENAMETOOLONG: name too long, access '/w/nope.txt'"},
		{fmt.Errorf("wrapped: %w", fs.ErrNotExist), "ENOENT: no such file or directory, access '/w/nope.txt'"},
		{fmt.Errorf("docker: engine gone: %w", ops.ErrTransport), "docker: engine gone: ops: transport failure"},
		{fmt.Errorf("ssh: %w: %w", ops.ErrTransport, ops.PathError("open", "/x", ops.ENOENT)), "ssh: ops: transport failure: open /x: no such file or directory"},
		{errors.New("plain"), "plain"},
	}
	for _, tt := range tests {
		if got := nodeError(tt.err, "access", "/w/nope.txt"); got != tt.want {
			t.Errorf("nodeError(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if got := nodeErrorNoPath(ops.PathError("read", "/d", ops.EISDIR), "read"); got != "EISDIR: illegal operation on a directory, read" {
		t.Errorf("no path: %q", got)
	}
	e := nodeErr(fmt.Errorf("x: %w", ops.ErrTransport), "open", "/a")
	if !errors.Is(e, ops.ErrTransport) {
		t.Errorf("nodeErr lost the transport error")
	}
}
