package docker

import (
	"bytes"
	"context"
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

// The file system goes through exec, not the archive API: the archive
// endpoint takes the per-container lock, fails on a read-only root file
// system and writes nothing under a tmpfs. Every operation is one exec of a
// short sh script that works in busybox and bash; errors come back as our
// errno marker or the tools' strerror texts (errno.go). Ops follow the
// syscall names Node reports: open, read, stat, lstat, scandir, mkdir,
// realpath, access, unlink.

// prelude defines e, which reports a code the script determined itself.
const prelude = "e() { echo \"" + errnoMarker + "$1\" >&2; return 1; }\n"

// statFormat is parseable whatever the name holds: raw mode (hex), size,
// mtime; the name is known to the caller.
const statFormat = "%f %s %Y"

// fsScript runs a file script and maps a failure to a *fs.PathError.
func (b *Backend) fsScript(ctx context.Context, op, name, body string, stdin io.Reader) ([]byte, error) {
	if err := validPath(op, name); err != nil {
		return nil, err
	}
	res, err := b.script(ctx, prelude+"p="+shellproc.Quote(name)+"\n"+body, stdin)
	if err != nil {
		return nil, err
	}
	if res.code != 0 {
		return nil, pathErr(op, name, res.stderr)
	}
	return res.stdout, nil
}

func (b *Backend) execStat(ctx context.Context, name string) (fs.FileInfo, error) {
	return b.stat(ctx, "stat", name, "-L ")
}

func (b *Backend) execLstat(ctx context.Context, name string) (fs.FileInfo, error) {
	return b.stat(ctx, "lstat", name, "")
}

func (b *Backend) stat(ctx context.Context, op, name, flag string) (fs.FileInfo, error) {
	out, err := b.fsScript(ctx, op, name, "stat "+flag+"-c '"+statFormat+"' -- \"$p\"", nil)
	if err != nil {
		return nil, err
	}
	fi, err := parseStat(baseName(name), strings.TrimSpace(string(out)))
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return fi, nil
}

// readDirScript prints each entry name NUL-terminated, an empty record,
// then one stat line per entry in the same order (names may hold
// newlines; the stat lines hold none).
const readDirScript = `if [ ! -d "$p" ]; then stat -L -c %f -- "$p" >/dev/null || return; e ENOTDIR; return; fi
if [ ! -r "$p" ] || [ ! -x "$p" ]; then e EACCES; return; fi
cd -- "$p" || return
set --
for f in * .[!.]* ..?*; do if [ -e "$f" ] || [ -L "$f" ]; then set -- "$@" "$f"; fi; done
for f in "$@"; do printf '%s\0' "$f"; done
printf '\0'
if [ $# -gt 0 ]; then stat -c '` + statFormat + `' -- "$@"; fi`

func (b *Backend) execReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	out, err := b.fsScript(ctx, "scandir", name, readDirScript, nil)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(out, []byte{0, 0})
	var names []string
	var rest []byte
	switch {
	case len(out) > 0 && out[0] == 0:
		rest = out[1:]
	case i >= 0:
		names = strings.Split(string(out[:i]), "\x00")
		rest = out[i+2:]
	default:
		return nil, &fs.PathError{Op: "scandir", Path: name, Err: fmt.Errorf("docker: malformed listing")}
	}
	lines := strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n")
	if len(names) == 0 {
		lines = nil
	}
	if len(lines) != len(names) {
		return nil, &fs.PathError{Op: "scandir", Path: name, Err: fmt.Errorf("docker: %d names, %d stat lines (an entry changed during the listing)", len(names), len(lines))}
	}
	entries := make([]fs.DirEntry, 0, len(names))
	for k, n := range names {
		fi, err := parseStat(n, lines[k])
		if err != nil {
			return nil, &fs.PathError{Op: "scandir", Path: name, Err: err}
		}
		entries = append(entries, fs.FileInfoToDirEntry(fi))
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

func (b *Backend) execMkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	m := ""
	if p := perm & fs.ModePerm; p != 0 && p != 0o755 && p != 0o777 {
		m = "-m " + strconv.FormatUint(uint64(p&^0o022), 8) + " "
	}
	_, err := b.fsScript(ctx, "mkdir", name, `if [ -d "$p" ]; then return 0; fi
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

func (b *Backend) execRealPath(ctx context.Context, name string) (string, error) {
	if name == "/" {
		return "/", nil
	}
	out, err := b.fsScript(ctx, "realpath", name, realPathScript, nil)
	if err != nil {
		return "", err
	}
	if len(out) == 0 || out[0] != '/' {
		return "", &fs.PathError{Op: "realpath", Path: name, Err: fmt.Errorf("docker: unexpected output %q", out)}
	}
	return string(out), nil
}

func (b *Backend) execAccess(ctx context.Context, name string, mode ops.AccessMode) error {
	var checks strings.Builder
	for _, c := range []struct {
		bit  ops.AccessMode
		test string
	}{{ops.AccessRead, "-r"}, {ops.AccessWrite, "-w"}, {ops.AccessExec, "-x"}} {
		if mode&c.bit != 0 {
			fmt.Fprintf(&checks, "[ %s \"$p\" ] || { e EACCES; return; }\n", c.test)
		}
	}
	_, err := b.fsScript(ctx, "access", name, `if [ ! -e "$p" ]; then stat -L -c %f -- "$p" >/dev/null || return; e ENOENT; return; fi
`+checks.String()+"return 0", nil)
	return err
}

func (b *Backend) execRemove(ctx context.Context, name string) error {
	_, err := b.fsScript(ctx, "unlink", name, `if [ -d "$p" ] && [ ! -L "$p" ]; then rmdir -- "$p"; else rm -- "$p"; fi`, nil)
	return err
}

// writeFileScript writes stdin to the real path of $p atomically: a temp
// file in the target's directory renamed over it, keeping an existing
// file's mode ($perm for a new one). A file the user may not write is
// EACCES, as an in-place write would be (the rename alone would succeed).
// Redirections go on "true", a regular builtin: a failed redirection on a
// special builtin such as ":" makes sh exit. When no temp file can be created there
// or the rename fails (a bind-mounted file: EBUSY, EXDEV), it writes in
// place. The temp file must hold all $size bytes before the rename: an
// attach stream cut by an abort looks like a normal end of input to cat.
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
  cat > "$r"
fi`

func (b *Backend) execWriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	// Assume the usual umask (022) for a new file's mode, as os.WriteFile
	// would apply it.
	mode := strconv.FormatUint(uint64(perm&fs.ModePerm&^0o022), 8)
	_, err := b.fsScript(ctx, "open", name, "perm="+mode+"\nsize="+strconv.Itoa(len(data))+"\nrnd="+newCallID()+"\n"+writeFileScript, bytes.NewReader(data))
	return err
}

// countLinesScript prints the newline count and the size.
const countLinesScript = `if [ -d "$p" ]; then e EISDIR; return; fi
n=$(wc -l < "$p") || return
s=$(stat -L -c %s -- "$p") || return
echo $n $s`

// CountLines counts lines in the container (wc -l), without transferring
// the file.
func (b *Backend) execCountLines(ctx context.Context, name string) (newlines, size int64, err error) {
	out, err := b.fsScript(ctx, "open", name, countLinesScript, nil)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok && ops.ErrnoOf(pe) == ops.EISDIR {
			pe.Op = "read"
		}
		return 0, 0, err
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return 0, 0, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("docker: unexpected output %q", out)}
	}
	newlines, err1 := strconv.ParseInt(f[0], 10, 64)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("docker: unexpected output %q", out)}
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
		return nil, fmt.Errorf("docker: unexpected stat output %q", line)
	}
	raw, err1 := strconv.ParseUint(f[0], 16, 32)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	mtime, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, fmt.Errorf("docker: unexpected stat output %q", line)
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
