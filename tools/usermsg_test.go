package tools

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// permissionTarget is a memfs target whose user can be chosen, whose
// /work/ro.txt is read-only, and whose commands answer the owner lookup
// with owner (an error when "").
func permissionTarget(owner string) *memfs.FS {
	m := memfs.NewWithInfo(ops.Info{Backend: "memfs", WorkDir: "/work", Home: "/home/user", User: "user", UID: 1000, GID: 1000,
		OS: "linux", Arch: runtime.GOARCH, Shell: "/bin/sh", SpillDir: "/tmp/pi-spill", UserChoice: "--user UID:GID"})
	m.AddFile("/work/ro.txt", []byte("a\n"), 0o444)
	m.AddDir("/work/locked", 0o555)
	m.SetRunFunc(func(ctx context.Context, cmd *ops.Cmd) error {
		if owner == "" {
			return &ops.ExitError{Code: 1}
		}
		io.WriteString(cmd.Output, owner+"\n")
		return nil
	})
	return m
}

func tool(ts []loop.Tool, name string) loop.Tool {
	for _, t := range ts {
		if t.Name() == name {
			return t
		}
	}
	panic(name)
}

// TestPermissionAdvice: a file tool's EACCES keeps pi's text on its first
// line and adds who the sandbox runs as, who owns the path and the --user
// that fixes it.
func TestPermissionAdvice(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, owner, tool, args, first, advice string
	}{
		{"edit, another owner", "1001:1001\n/work/ro.txt", "edit", `{"path":"ro.txt","edits":[{"oldText":"a","newText":"b"}]}`,
			"Could not edit file: ro.txt. Error code: EACCES.",
			"[pi-sandbox: the sandbox runs as 1000:1000 (user); /work/ro.txt belongs to 1001:1001; open the sandbox as its owner: --user 1001:1001]"},
		{"write, root's directory", "0:0\n/work/locked", "write", `{"path":"locked/n.txt","content":"x"}`,
			"EACCES: permission denied, open '/work/locked/n.txt'",
			"[pi-sandbox: the sandbox runs as 1000:1000 (user); /work/locked belongs to 0:0; give it to the sandbox's user (chown -R 1000:1000 on the host) or open the sandbox as root: --user 0:0]"},
		{"owner unknown", "", "edit", `{"path":"ro.txt","edits":[{"oldText":"a","newText":"b"}]}`,
			"Could not edit file: ro.txt. Error code: EACCES.",
			"[pi-sandbox: the sandbox runs as 1000:1000 (user), which may not use /work/ro.txt; open the sandbox as the path's owner: --user UID:GID]"},
		{"the user owns it: the mode refuses", "1000:1000\n/work/ro.txt", "edit", `{"path":"ro.txt","edits":[{"oldText":"a","newText":"b"}]}`,
			"Could not edit file: ro.txt. Error code: EACCES.", ""},
		{"not a permission failure", "1001:1001\n/work", "read", `{"path":"nope.txt"}`,
			"ENOENT: no such file or directory, access '/work/nope.txt'", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, errText, _ := call(t, ctx, tool(All(permissionTarget(tc.owner)), tc.tool), tc.args)
			want := tc.first
			if tc.advice != "" {
				want += "\n" + tc.advice
			}
			if errText != want {
				t.Errorf("error text\n%q\nwant\n%q", errText, want)
			}
		})
	}
	// Where the user cannot be chosen (the local user), pi's text alone.
	m := memfs.New()
	m.AddFile("/work/ro.txt", []byte("a\n"), 0o444)
	_, _, errText, _ := call(t, ctx, tool(All(m), "edit"), `{"path":"ro.txt","edits":[{"oldText":"a","newText":"b"}]}`)
	if errText != "Could not edit file: ro.txt. Error code: EACCES." {
		t.Errorf("no UserChoice: %q", errText)
	}
}

// TestPermissionAdviceKeepsTheError: the advice keeps the error chain
// (errors.Is still finds the code).
func TestPermissionAdviceKeepsTheError(t *testing.T) {
	_, err := tool(All(permissionTarget("1001:1001\n/work/ro.txt")), "edit").Execute(context.Background(), "id",
		map[string]any{"path": "ro.txt", "edits": []any{map[string]any{"oldText": "a", "newText": "b"}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "--user 1001:1001") || ops.ErrnoOf(err) != ops.EACCES || errors.Is(err, ops.ErrTransport) {
		t.Fatalf("%v", err)
	}
}
