package execops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/internal/shellproc"
)

// Every file operation is one process running a short sh script that works
// in busybox and bash; errors come back as our
// errno marker or the tools' strerror texts (errno.go). Ops follow the
// syscall names Node reports: open, read, stat, lstat, scandir, mkdir,
// realpath, access, unlink.

// prelude defines e, which reports a code the script determined itself.
const prelude = "e() { echo \"" + errnoMarker + "$1\" >&2; return 1; }\n"

// statFormat is parseable whatever the name holds: raw mode (hex), size,
// mtime; the name is known to the caller.
const statFormat = "%f %s %Y"

// fsScript runs a file script and maps a failure to a *fs.PathError.
func (o *Ops) fsScript(ctx context.Context, op, name, body string, stdin io.Reader) ([]byte, error) {
	if err := validPath(op, name); err != nil {
		return nil, err
	}
	res, err := o.Script(ctx, prelude+"p="+shellproc.Quote(name)+"\n"+body, stdin)
	if err != nil {
		return nil, err
	}
	if res.Code != 0 {
		return nil, o.pathErr(op, name, res.Stderr)
	}
	return res.Stdout, nil
}

func (o *Ops) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return o.stat(ctx, "stat", name, "-L ")
}

func (o *Ops) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	return o.stat(ctx, "lstat", name, "")
}

func (o *Ops) stat(ctx context.Context, op, name, flag string) (fs.FileInfo, error) {
	out, err := o.fsScript(ctx, op, name, "stat "+flag+"-c '"+statFormat+"' -- \"$p\"", nil)
	if err != nil {
		return nil, err
	}
	fi, err := parseStat(baseName(name), strings.TrimSpace(string(out)))
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return fi, nil
}

// readDirScript lists in time linear in the entries: for each of the three
// globs that together match every name but . and .. (one expansion each;
// an unmatched glob stays literal and is skipped), it prints the names
// NUL-terminated, an empty record, then one stat line per name in the same
// order (names may hold newlines; the stat lines hold none). xargs keeps
// each stat's argument list under the exec limit.
const readDirScript = `if [ ! -d "$p" ]; then stat -L -c %f -- "$p" >/dev/null || return; e ENOTDIR; return; fi
if [ ! -r "$p" ] || [ ! -x "$p" ]; then e EACCES; return; fi
cd -- "$p" || return
x=; command -v xargs >/dev/null 2>&1 && x=1
for g in 1 2 3; do
  case $g in 1) set -- *;; 2) set -- .[!.]*;; 3) set -- ..?*;; esac
  if [ $# -eq 1 ] && [ ! -e "$1" ] && [ ! -L "$1" ]; then continue; fi
  printf '%s\0' "$@"; printf '\0'
  if [ -n "$x" ]; then printf '%s\0' "$@" | xargs -0 stat -c '` + statFormat + `' -- || return
  else stat -c '` + statFormat + `' -- "$@" || return; fi
done
true`

func (o *Ops) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	out, err := o.fsScript(ctx, "scandir", name, readDirScript, nil)
	if err != nil {
		return nil, err
	}
	entries, err := parseListing(out)
	if err != nil {
		return nil, &fs.PathError{Op: "scandir", Path: name, Err: o.errorf("%w", err)}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

// parseListing parses readDirScript's groups.
func parseListing(out []byte) ([]fs.DirEntry, error) {
	var entries []fs.DirEntry
	for len(out) > 0 {
		i := bytes.Index(out, []byte{0, 0})
		if i < 0 {
			return nil, errors.New("malformed listing")
		}
		names := strings.Split(string(out[:i]), "\x00")
		out = out[i+2:]
		for _, n := range names {
			j := bytes.IndexByte(out, '\n')
			if j < 0 {
				return nil, fmt.Errorf("%d names, fewer stat lines (an entry changed during the listing)", len(names))
			}
			fi, err := parseStat(n, string(out[:j]))
			if err != nil {
				return nil, err
			}
			entries = append(entries, fs.FileInfoToDirEntry(fi))
			out = out[j+1:]
		}
	}
	return entries, nil
}

func (o *Ops) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	m := ""
	if p := perm & fs.ModePerm; p != 0 && p != 0o755 && p != 0o777 {
		m = "-m " + strconv.FormatUint(uint64(p&^0o022), 8) + " "
	}
	_, err := o.fsScript(ctx, "mkdir", name, `if [ -d "$p" ]; then return 0; fi
mkdir -p `+m+`-- "$p"`, nil)
	return err
}

// realPathScript prints the resolved path without a newline. The last
// element may be missing (a dangling link counts as missing); then its
// parent is resolved. A symbolic link loop is ELOOP.
const realPathScript = `if [ -e "$p" ]; then r=$(readlink -f -- "$p") || return; printf '%s' "$r"; return; fi
if [ -L "$p" ]; then
  m=$(stat -L -c %f -- "$p" 2>&1)
  case $m in *"levels of symbolic links"*|*"ymbolic link loop"*) e ELOOP; return;; esac
fi
d=${p%/*}; [ -n "$d" ] || d=/; n=${p##*/}
if [ ! -d "$d" ]; then stat -L -c %f -- "$d" >/dev/null || return; e ENOTDIR; return; fi
r=$(readlink -f -- "$d") || return
if [ "$r" = / ]; then printf '/%s' "$n"; else printf '%s/%s' "$r" "$n"; fi`

func (o *Ops) RealPath(ctx context.Context, name string) (string, error) {
	if name == "/" {
		return "/", nil
	}
	out, err := o.fsScript(ctx, "realpath", name, realPathScript, nil)
	if err != nil {
		return "", err
	}
	if len(out) == 0 || out[0] != '/' {
		return "", &fs.PathError{Op: "realpath", Path: name, Err: o.errorf("unexpected output %q", out)}
	}
	return string(out), nil
}

func (o *Ops) Access(ctx context.Context, name string, mode ops.AccessMode) error {
	var checks strings.Builder
	for _, c := range []struct {
		bit  ops.AccessMode
		test string
	}{{ops.AccessRead, "-r"}, {ops.AccessWrite, "-w"}, {ops.AccessExec, "-x"}} {
		if mode&c.bit != 0 {
			fmt.Fprintf(&checks, "[ %s \"$p\" ] || { e EACCES; return; }\n", c.test)
		}
	}
	_, err := o.fsScript(ctx, "access", name, `if [ ! -e "$p" ]; then stat -L -c %f -- "$p" >/dev/null || return; e ENOENT; return; fi
`+checks.String()+"return 0", nil)
	return err
}

func (o *Ops) Remove(ctx context.Context, name string) error {
	_, err := o.fsScript(ctx, "unlink", name, `if [ -d "$p" ] && [ ! -L "$p" ]; then rmdir -- "$p"; else rm -- "$p"; fi`, nil)
	return err
}

// writeFileScript writes stdin to the real path of $p atomically: a temp
// file in the target's directory renamed over it, keeping an existing
// file's mode ($perm for a new one). A file the user may not write is
// EACCES, as an in-place write would be (the rename alone would succeed).
// Redirections go on "true", a regular builtin: a failed redirection on a
// special builtin such as ":" makes sh exit. When no temp file can be created there
// or the rename fails (a bind-mounted file: EBUSY, EXDEV), it writes in
// place — from a staged copy in $stage (the per-call directory), so that
// the target is never truncated by a transfer that does not complete. The
// temp file must hold all $size bytes before the rename: an attach stream
// cut by an abort looks like a normal end of input to cat.
const writeFileScript = `d=${p%/*}; [ -n "$d" ] || d=/; n=${p##*/}
if [ -e "$p" ]; then r=$(readlink -f -- "$p") || return
elif [ -L "$p" ]; then t=$(readlink -- "$p"); case $t in /*) r=$t;; *) r=$d/$t;; esac
else
  if [ ! -d "$d" ]; then stat -L -c %f -- "$d" >/dev/null || return; e ENOTDIR; return; fi
  r=$(readlink -f -- "$d") || return
  if [ "$r" = / ]; then r=/$n; else r=$r/$n; fi
fi
if [ -d "$r" ]; then e EISDIR; return; fi
if [ -e "$r" ] && [ ! -w "$r" ]; then e EACCES; return; fi
rd=${r%/*}; [ -n "$rd" ] || rd=/
m=$perm
if [ -e "$r" ]; then m=$(stat -c %a -- "$r") || return; fi
tmp=$rd/.pi-sandbox-write.$rnd
if [ -w "$rd" ] && [ ! -e "$tmp" ] && [ ! -L "$tmp" ]; then
  # Created exclusively (noclobber is O_EXCL: an existing name, or a link
  # planted there, fails) under an unpredictable name, written in the same
  # open.
  if ! (set -C; exec cat > "$tmp"); then [ -f "$tmp" ] && [ ! -L "$tmp" ] && rm -f "$tmp"; return 1; fi
  if [ "$(stat -c %s -- "$tmp")" != "$size" ]; then rm -f "$tmp"; e EIO; return; fi
  chmod "$m" "$tmp" || { rm -f "$tmp"; return 1; }
  if mv -f "$tmp" "$r" 2>/dev/null; then return 0; fi
  cat "$tmp" > "$r" || { rm -f "$tmp"; return 1; }
  rm -f "$tmp"
else
  if [ ! -e "$r" ]; then true > "$r" || return; chmod "$m" "$r"; fi
  # In place, but only once all the data is here: staged in the per-call
  # directory first, so a client that dies mid-transfer leaves the target
  # as it was rather than truncated.
  if [ -n "$stage" ] && st=$(mktemp "$stage/write.XXXXXXXX" 2>/dev/null); then
    cat > "$st" || { rm -f "$st"; return 1; }
    if [ "$(stat -c %s -- "$st")" != "$size" ]; then rm -f "$st"; e EIO; return; fi
    cat "$st" > "$r" || { rm -f "$st"; return 1; }
    rm -f "$st"
  else
    cat > "$r"
  fi
fi`

func (o *Ops) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	// Assume the usual umask (022) for a new file's mode, as os.WriteFile
	// would apply it.
	mode := strconv.FormatUint(uint64(perm&fs.ModePerm&^0o022), 8)
	_, err := o.fsScript(ctx, "open", name, "perm="+mode+"\nsize="+strconv.Itoa(len(data))+"\nrnd="+NewCallID()+"\nstage="+shellproc.Quote(o.t.RunDir)+"\n"+writeFileScript, bytes.NewReader(data))
	return err
}

// countLinesScript prints the newline count and the size.
const countLinesScript = `if [ -d "$p" ]; then e EISDIR; return; fi
n=$(wc -l < "$p") || return
s=$(stat -L -c %s -- "$p") || return
echo $n $s`

// CountLines counts lines in the container (wc -l), without transferring
// the file.
func (o *Ops) CountLines(ctx context.Context, name string) (newlines, size int64, err error) {
	out, err := o.fsScript(ctx, "open", name, countLinesScript, nil)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok && ops.ErrnoOf(pe) == ops.EISDIR {
			pe.Op = "read"
		}
		return 0, 0, err
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return 0, 0, &fs.PathError{Op: "open", Path: name, Err: o.errorf("unexpected output %q", out)}
	}
	newlines, err1 := strconv.ParseInt(f[0], 10, 64)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, &fs.PathError{Op: "open", Path: name, Err: o.errorf("unexpected output %q", out)}
	}
	return newlines, size, nil
}

// fileInfo is a stat result.
type fileInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
}

func (f *fileInfo) Name() string       { return f.name }
func (f *fileInfo) Size() int64        { return f.size }
func (f *fileInfo) Mode() fs.FileMode  { return f.mode }
func (f *fileInfo) ModTime() time.Time { return f.modTime }
func (f *fileInfo) IsDir() bool        { return f.mode.IsDir() }
func (f *fileInfo) Sys() any           { return nil }

// parseStat parses a statFormat line.
func parseStat(name, line string) (*fileInfo, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return nil, fmt.Errorf("execops: unexpected stat output %q", line)
	}
	raw, err1 := strconv.ParseUint(f[0], 16, 32)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	mtime, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, fmt.Errorf("execops: unexpected stat output %q", line)
	}
	return &fileInfo{name: name, size: size, mode: unixMode(uint32(raw)), modTime: time.Unix(mtime, 0)}, nil
}

// unixMode converts st_mode to an fs.FileMode.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	}
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

func baseName(p string) string {
	if p == "/" {
		return "/"
	}
	return p[strings.LastIndexByte(p, '/')+1:]
}
