package memfs_test

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
	"github.com/pi-sandbox/pi-sandbox/ops/opstest"
)

// TestConformanceFS runs the file part of opstest on memfs, as
// fstest.TestFS checks MapFS.
func TestConformanceFS(t *testing.T) {
	opstest.TestFS(t, func(t *testing.T) ops.Backend {
		m := memfs.New()
		m.SetRunFunc(fixtureShell(m))
		return m
	})
}

// fixtureShell interprets the fixture commands of opstest's file cases on
// m: "&&" lists of cd, mkdir [-p], echo W > F, ln -s T L, chmod MODE F,
// if test -r|-w|-x F; then echo yes; else echo no; fi, test -x F && echo ok,
// id -u, wc -c < F, umask, the owner of a file by ls -ln, and chmod -R u+rwx/rm -rf (scratch cleanup). Anything else
// is unsupported, and the case skips.
func fixtureShell(m *memfs.FS) func(ctx context.Context, c *ops.Cmd) error {
	return func(ctx context.Context, c *ops.Cmd) error {
		dir := c.Dir
		if dir == "" {
			dir = m.Info().WorkDir
		}
		abs := func(p string) string {
			if path.IsAbs(p) {
				return p
			}
			return path.Join(dir, p)
		}
		out := func(s string) {
			if c.Output != nil {
				fmt.Fprint(c.Output, s)
			}
		}
		if strings.HasPrefix(c.Command, "chmod -R u+rwx ") {
			return nil // scratch cleanup: the backend goes with the test
		}
		if w := words(c.Command); len(w) == 11 && w[0] == "if" && w[1] == "test" && w[4] == "then" {
			mode := map[string]ops.AccessMode{"-r": ops.AccessRead, "-w": ops.AccessWrite, "-x": ops.AccessExec}[w[2]]
			f := strings.TrimSuffix(w[3], ";")
			if mode == 0 {
				return unsupported(c.Command)
			}
			if m.Access(ctx, abs(f), mode) == nil {
				out("yes\n")
			} else {
				out("no\n")
			}
			return nil
		}
		switch c.Command {
		case "umask":
			out("0022\n")
			return nil
		case "ls -ln a | awk '{print $3}'":
			out(strconv.Itoa(m.Info().UID) + "\n")
			return nil
		}
		for _, part := range strings.Split(c.Command, " && ") {
			w := words(part)
			switch {
			case len(w) == 2 && w[0] == "cd":
				dir = abs(w[1])
			case len(w) >= 2 && w[0] == "mkdir":
				for _, d := range w[1:] {
					if d != "-p" {
						if err := m.MkdirAll(ctx, abs(d), 0o755); err != nil {
							return &ops.ExitError{Code: 1}
						}
					}
				}
			case len(w) == 4 && w[0] == "echo" && w[2] == ">":
				if err := m.WriteFile(ctx, abs(w[3]), []byte(w[1]+"\n"), 0o644); err != nil {
					return &ops.ExitError{Code: 1}
				}
			case len(w) == 4 && w[0] == "ln" && w[1] == "-s":
				if err := m.AddSymlink(w[2], abs(w[3])); err != nil {
					return &ops.ExitError{Code: 1}
				}
			case len(w) == 3 && w[0] == "chmod":
				perm, err := strconv.ParseUint(w[1], 8, 32)
				if err != nil {
					return unsupported(part)
				}
				if err := m.Chmod(abs(w[2]), fs.FileMode(perm)); err != nil {
					return &ops.ExitError{Code: 1}
				}
			case len(w) == 3 && w[0] == "test" && w[1] == "-x":
				if m.Access(ctx, abs(w[2]), ops.AccessExec) != nil {
					return &ops.ExitError{Code: 1}
				}
			case len(w) == 2 && w[0] == "echo":
				out(w[1] + "\n")
			case len(w) == 2 && w[0] == "id" && w[1] == "-u":
				out(strconv.Itoa(m.Info().UID) + "\n")
			case len(w) == 4 && w[0] == "wc" && w[1] == "-c" && w[2] == "<":
				fi, err := m.Stat(ctx, abs(w[3]))
				if err != nil {
					return &ops.ExitError{Code: 1}
				}
				out(strconv.FormatInt(fi.Size(), 10) + "\n")
			default:
				return unsupported(part)
			}
		}
		return nil
	}
}

func unsupported(cmd string) error {
	return &ops.StartError{Err: fmt.Errorf("memfs fixture shell: %q: %w", cmd, ops.ErrUnsupported)}
}

// words splits s at spaces outside single quotes and removes the quotes.
func words(s string) []string {
	var out []string
	var b strings.Builder
	in, any := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			in, any = !in, true
		case r == ' ' && !in:
			if any || b.Len() > 0 {
				out = append(out, b.String())
			}
			b.Reset()
			any = false
		default:
			b.WriteRune(r)
		}
	}
	if any || b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}
