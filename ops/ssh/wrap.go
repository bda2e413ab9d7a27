package sshops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// wrapScript runs one command in its own process group and reports on the
// session's stderr, which it keeps as a control channel (the command's stderr
// is merged into stdout at the source, so stdout carries the output in the
// order it was written):
//
//	pi-sandbox-ssh: pgid N          the command's process group
//	pi-sandbox-ssh: exit N          the shell's exit status (128+n after signal n)
//	pi-sandbox-ssh: eof             every process holding the output closed it
//	pi-sandbox-ssh: start chdir E   the working directory could not be entered
//	pi-sandbox-ssh: start setsid    setsid(1) is missing
//
// Before anything else the wrapper writes outMarker on stdout: what the login
// shell's rc files printed comes before it and is dropped, and other lines
// on stderr are ignored, so a chatty ~/.bashrc does not leak into the
// output or confuse the reports.
//
// The output goes through cat because sshd sends the channel's EOF only once
// stderr is closed too, which the wrapper keeps open: cat's EOF is how the
// caller learns that no orphan holds the output, without waiting for the
// exit grace.
//
// SHLVL=1 keeps the command's bash from sourcing ~/.bashrc a second time:
// bash does that when SSH_CLIENT is set and it thinks it is the top-level
// shell, and the login shell's exec reset SHLVL. What the login shell's rc
// file exported (PATH from nvm or pyenv) is inherited anyway.
//
// $7 non-empty starts the command with the entries alone (`env -i`, a
// replaced base environment); else they are exported on top of the
// session's.
//
// With a shim (ops/shim, uploaded by New) its cached binary's bytes are
// checked first ($5 its size, $6 its SHA-256) and the checked descriptor
// runs, never the path (shim.PinScript); a binary that differs is reported
// as "pi-sandbox-ssh: start shim". The session leader is then the shim,
// which also kills processes that called setsid themselves; its own
// reports ("pi-sandbox-shim: exited N", "pi-sandbox-shim: start: ...") join
// the control channel.
//
// The session's stdin is a watchdog: when the client closes it (the command
// is done, or cancelled), or sshd does (the connection dropped), the whole
// group gets SIGKILL. In a non-interactive shell a background job is not a
// group leader, so `setsid CMD &` does not fork again and $! is the group.
// Written for POSIX sh and busybox (`kill -9 -PGID`, no `--`, no setsid -w).
const wrapScript = shim.PinScript + `printf '` + outMarker + `'
exec 3>&2 2>/dev/null 4<&0 </dev/null
if ! cd "$1"; then
if [ ! -e "$1" ]; then e=ENOENT; elif [ ! -d "$1" ]; then e=ENOTDIR; else e=EACCES; fi
printf 'pi-sandbox-ssh: start chdir %s\n' "$e" >&3; exit 127
fi
command -v setsid >/dev/null || { printf 'pi-sandbox-ssh: start setsid\n' >&3; exit 127; }
if [ -n "$4" ] && ! pin_shim "$4" "$5" "$6"; then printf 'pi-sandbox-ssh: start shim\n' >&3; exit 127; fi
s=$2 c=$3 x=$4 i=$7; shift 7
if [ -n "$i" ]; then set -- env -i "$@"; else
SHLVL=1; export SHLVL
for kv; do export "$kv"; done; set --
fi
{
if [ -n "$x" ]; then
setsid "$@" ` + shim.PinExe + ` __shim run -- "$s" -c "$c" 2>&3 3>&- 4<&- &
else
setsid "$@" "$s" -c "$c" 2>&1 3>&- 4<&- &
fi
p=$!
exec >/dev/null
printf 'pi-sandbox-ssh: pgid %s\n' "$p" >&3
(read -r _; ` + shimStop + `; kill -9 -"$p") <&4 3>&- &
w=$!
exec 4<&-
wait "$p"; st=$?
printf 'pi-sandbox-ssh: exit %s\n' "$st" >&3
wait "$w"
exit "$st"
} | { cat; printf 'pi-sandbox-ssh: eof\n' >&3; }`

// outMarker starts the wrapper's stdout (printf format; \036 is the ASCII
// record separator, which rc files do not print).
const outMarker = `\036pi-sandbox-ssh\036`

// outMarkerBytes is outMarker as printf writes it.
const outMarkerBytes = "\x1epi-sandbox-ssh\x1e"

// shimStop asks a shim ($x, pid $p) to kill every descendant (setsid
// escapees included) and waits up to 2 s for it to be gone or a zombie (a
// shim whose wrapper was killed is reaped by PID 1, which may never do it);
// the group kill follows. Without a shim it does nothing.
const shimStop = `[ -z "$x" ] || { kill -TERM "$p"; n=0; while [ $n -lt 40 ]; do z=$(sed 's/.*) //' /proc/$p/stat | cut -c1); case "$z" in ""|Z|X) break;; esac; sleep 0.05; n=$((n+1)); done; } 2>/dev/null`

// remoteCommand is the exec request for one Run. sshd hands it to the user's
// login shell, so everything is quoted for a POSIX shell and the wrapper runs
// under /bin/sh whatever the login shell is.
func remoteCommand(dir, shell, shimPath string, up *shim.Upload, command string, env []string, clearEnv bool) string {
	var b strings.Builder
	b.WriteString("exec /bin/sh -c ")
	b.WriteString(shquote.Quote(wrapScript))
	b.WriteString(" pi-sandbox ")
	b.WriteString(shquote.Quote(dir))
	b.WriteByte(' ')
	b.WriteString(shquote.Quote(shell))
	b.WriteByte(' ')
	b.WriteString(shquote.Quote(command))
	b.WriteByte(' ')
	if shimPath != "" && up != nil {
		b.WriteString(up.PinArgs(shimPath))
	} else {
		b.WriteString("'' 0 -")
	}
	if clearEnv {
		b.WriteString(" -i")
	} else {
		b.WriteString(" ''")
	}
	for _, kv := range env {
		b.WriteByte(' ')
		b.WriteString(shquote.Quote(kv))
	}
	return b.String()
}

// checkEnv rejects entries a shell cannot export.
func checkEnv(envs ...[]string) error {
	for _, kv := range slices.Concat(envs...) {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !validName(k) {
			return fmt.Errorf("sshops: bad environment entry %q", kv)
		}
	}
	return nil
}

func validName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// defaultEnv is the non-interactive environment every command gets (DESIGN
// §5); Cmd.Env overrides it.
var defaultEnv = ops.NonInteractiveEnv()
