package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// userMessager is implemented by errors that carry a text meant for the
// model, such as the sandbox's refusal of a path outside its roots. Such a
// text replaces whatever Node-style text a tool would build around the
// error, on every tool.
type userMessager interface{ UserMessage() string }

// withUserMessages wraps t so that a failure caused by an error carrying a
// user message reports exactly that message, and a file tool's permission
// failure (EACCES, EPERM) on a target whose user can be chosen
// (Info.UserChoice) gets a line after pi's text: who the sandbox runs as,
// who owns the path, and how to open the sandbox as its owner.
func withUserMessages(t loop.Tool, b ops.Backend, info ops.Info) loop.Tool {
	u := userMessageTool{Tool: t}
	if t.Name() != "bash" && info.UserChoice != "" {
		u.b, u.info = b, info
	}
	if p, ok := t.(loop.ArgumentPreparer); ok {
		return &userMessageToolPrep{u, p}
	}
	return &u
}

type userMessageTool struct {
	loop.Tool
	b    ops.Backend // nil: no permission advice
	info ops.Info
}

// Unwrap returns the wrapped tool, so the loop sees its markers
// (loop.StartOrdered).
func (u *userMessageTool) Unwrap() loop.Tool { return u.Tool }

func (u *userMessageTool) Execute(ctx context.Context, id string, args map[string]any, update loop.UpdateFunc) (*loop.Result, error) {
	res, err := u.Tool.Execute(ctx, id, args, update)
	if err == nil || ctx.Err() != nil {
		return res, err
	}
	var um userMessager
	if errors.As(err, &um) {
		return nil, &fileError{msg: um.UserMessage(), err: err}
	}
	if u.b != nil {
		if hint := permissionHint(ctx, u.b, u.info, err); hint != "" {
			return nil, &fileError{msg: err.Error() + "\n" + hint, err: err}
		}
	}
	return res, err
}

type userMessageToolPrep struct {
	userMessageTool
	p loop.ArgumentPreparer
}

func (u *userMessageToolPrep) PrepareArguments(raw any) any { return u.p.PrepareArguments(raw) }

// permissionHint is the advice for err when it is a permission failure on
// a path: the sandbox's user, the owner of the path (or of its nearest
// existing parent, looked up in the target; left out when that fails) and
// info.UserChoice with the owner filled in. "" when err is something else
// or the sandbox already runs as the owner (the mode refuses, not the
// user).
func permissionHint(ctx context.Context, r ops.Runner, info ops.Info, err error) string {
	if c, ok := errnoOf(err); !ok || (c != ops.EACCES && c != ops.EPERM) {
		return ""
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path == "" {
		return ""
	}
	p := pe.Path
	if !path.IsAbs(p) {
		p = path.Join(info.WorkDir, p)
	}
	runAs := "the sandbox runs as " + fmt.Sprintf("%d:%d", info.UID, info.GID)
	if info.UID < 0 {
		runAs = "the sandbox runs as an unknown user"
	} else if info.User != "" {
		runAs += " (" + info.User + ")"
	}
	owner, where := pathOwner(ctx, r, p)
	if owner == "" {
		return "[pi-sandbox: " + runAs + ", which may not use " + p + "; open the sandbox as the path's owner: " + info.UserChoice + "]"
	}
	if uid, _, _ := strings.Cut(owner, ":"); info.UID >= 0 && uid == strconv.Itoa(info.UID) {
		return ""
	}
	fix := strings.ReplaceAll(info.UserChoice, "UID:GID", owner)
	if strings.HasPrefix(owner, "0:") && info.UID >= 0 {
		fix = fmt.Sprintf("give it to the sandbox's user (chown -R %d:%d on the host) or open the sandbox as root: %s", info.UID, info.GID, fix)
	} else {
		fix = "open the sandbox as its owner: " + fix
	}
	return "[pi-sandbox: " + runAs + "; " + where + " belongs to " + owner + "; " + fix + "]"
}

// pathOwner returns "UID:GID" of p, or of its nearest existing parent, and
// that path, read in the target; "" when it cannot be read.
func pathOwner(ctx context.Context, r ops.Runner, p string) (owner, where string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	q := "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
	script := "p=" + q + `; while [ ! -e "$p" ] && [ "$p" != / ]; do p=${p%/*}; [ -n "$p" ] || p=/; done; stat -c '%u:%g' -- "$p" && printf '%s\n' "$p"`
	if err := r.Run(ctx, &ops.Cmd{Command: script, Output: &out}); err != nil {
		return "", ""
	}
	owner, where, _ = strings.Cut(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(owner, ":") || where == "" {
		return "", ""
	}
	return owner, where
}
