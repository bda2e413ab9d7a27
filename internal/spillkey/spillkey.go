// Package spillkey names and keeps a sandbox's spill directory (bash's full
// output) the same way on every backend: a private per-user base directory
// on the target, and under it one directory per sandbox, keyed by the
// target and the working directory. The key is stable across processes, so
// a later one-shot call on the same sandbox reads an earlier call's full
// output (its directory is a confinement root again), while a sandbox of
// another working directory gets another directory, which is not its root.
//
// Every level must be a real directory owned by the user with mode 0700,
// so another user of a shared host cannot pre-create it, plant a link or
// read the output. Spill files older than [MaxAge] are removed when a
// sandbox opens, and each directory keeps its newest [MaxFiles] files.
package spillkey

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"
)

const (
	// MaxAge is how long a spill file is kept.
	MaxAge = 7 * 24 * time.Hour
	// MaxFiles is how many spill files one sandbox's directory keeps.
	MaxFiles = 50
)

// Key names the spill directory of a sandbox on target (empty for the
// local host) with working directory workDir.
func Key(target, workDir string) string {
	s := workDir
	if target != "" {
		s = target + "\x00" + workDir
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// BaseName is the per-user base directory's name under its parent.
func BaseName(uid int) string { return "pi-sandbox-spill-" + strconv.Itoa(uid) }

// Script defines the sh function spill_dir PARENT KEY for a target: it
// creates or checks PARENT/pi-sandbox-spill-UID and its KEY directory
// (each a real directory of the user with mode 0700, else it fails and
// prints nothing), removes spill files older than MaxAge under the base,
// keeps the newest MaxFiles in KEY, and prints the directory. It works in
// busybox and dash (stat -c, find -mtime, ls -t). It uses $me as the
// user's uid when the caller set it (one process less).
var Script = `spill_dir() {
  me=${me:-$(id -u)}; sb=$1/pi-sandbox-spill-$me; sd=$sb/$2
  [ -d "$sb" ] || mkdir -m 700 "$sb" 2>/dev/null || return 1
  [ ! -L "$sb" ] && [ -O "$sb" ] || return 1
  [ -d "$sd" ] || mkdir -m 700 "$sd" 2>/dev/null || return 1
  [ ! -L "$sd" ] && [ "$(stat -c %u:%a "$sb" "$sd" 2>/dev/null)" = "$me:700
$me:700" ] || return 1
  find "$sb" -type f -mtime +` + strconv.Itoa(int(MaxAge/(24*time.Hour))-1) + ` -exec rm -f {} + 2>/dev/null
  n=0; for f in $(ls -t "$sd" 2>/dev/null); do n=$((n+1)); [ $n -gt ` + strconv.Itoa(MaxFiles) + ` ] && rm -f "$sd/$f"; done
  printf '%s\n' "$sd"
}
`

// Local creates (or checks) the spill directory of the local sandbox whose
// working directory is wd, under $TMPDIR/pi-sandbox-UID/spill, and cleans
// it as Script does.
func Local(wd string) (string, error) {
	base := filepath.Join(os.TempDir(), fmt.Sprintf("pi-sandbox-%d", os.Getuid()))
	spill := filepath.Join(base, "spill")
	dir := filepath.Join(spill, Key("", wd))
	for _, d := range []string{base, spill, dir} {
		if err := os.Mkdir(d, 0o700); err != nil && !os.IsExist(err) {
			return "", fmt.Errorf("spillkey: spill directory: %w", err)
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return "", fmt.Errorf("spillkey: spill directory: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("spillkey: spill directory %s must be a directory owned by uid %d with mode 0700", d, os.Getuid())
		}
	}
	Clean(spill, dir, time.Now())
	return dir, nil
}

// Clean removes the regular files older than MaxAge in base's directories
// (one level down) and keeps the newest MaxFiles in dir. Errors are
// ignored: cleaning is best effort.
func Clean(base, dir string, now time.Time) {
	subs, _ := os.ReadDir(base)
	for _, s := range subs {
		if !s.IsDir() {
			continue
		}
		d := filepath.Join(base, s.Name())
		files, _ := os.ReadDir(d)
		for _, f := range files {
			if fi, err := f.Info(); err == nil && fi.Mode().IsRegular() && now.Sub(fi.ModTime()) > MaxAge {
				os.Remove(filepath.Join(d, f.Name()))
			}
		}
	}
	files, _ := os.ReadDir(dir)
	type entry struct {
		name string
		mod  time.Time
	}
	var es []entry
	for _, f := range files {
		if fi, err := f.Info(); err == nil && fi.Mode().IsRegular() {
			es = append(es, entry{f.Name(), fi.ModTime()})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].mod.After(es[j].mod) })
	for _, e := range es[min(len(es), MaxFiles):] {
		if err := os.Remove(filepath.Join(dir, e.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
	}
}
