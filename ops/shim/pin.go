package shim

import (
	"errors"
	"strconv"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
)

// PinFD is the descriptor on which PinScript opens the binary it checks; the
// verified bytes run as PinExe.
const PinFD = 9

// PinExe runs the binary PinScript verified: the open descriptor, not the
// file's path, so a file replaced, renamed or removed after the check does
// not change what runs.
const PinExe = "/proc/self/fd/9"

// PinScript defines a POSIX sh function, pin_shim FILE SIZE SHA256, for a
// target where the account that runs the helper can also change its cached
// binary (an ssh account, the sandbox user): it opens FILE on descriptor 9
// and returns 0 when what it reads there is exactly SIZE bytes with that
// hex SHA-256, 1 when FILE is not a regular file or holds anything else (the
// descriptor is then closed), and 2 when the target has no sha256sum and
// head to check with. Nothing of FILE runs before the check, and the caller
// then runs PinExe, never FILE. The tools are taken from /usr/bin or /bin,
// never from PATH, which the account's own files may lead elsewhere; at most
// SIZE+1 bytes are read.
const PinScript = `pin_shim() {
  [ -f "$1" ] || return 1
  pin_h= pin_d=
  for pin_p in /usr/bin /bin; do
    [ -z "$pin_h" ] && [ -x "$pin_p/sha256sum" ] && pin_h=$pin_p/sha256sum
    [ -z "$pin_d" ] && [ -x "$pin_p/head" ] && pin_d=$pin_p/head
  done
  [ -n "$pin_h" ] && [ -n "$pin_d" ] || return 2
  { command exec 9<"$1"; } 2>/dev/null || return 1
  pin_s=$("$pin_d" -c $(($2 + 1)) <&9 | "$pin_h")
  [ "${pin_s%% *}" = "$3" ] && return 0
  exec 9<&-
  return 1
}
`

// PinArgs are pin_shim's arguments for the binary's copy at remote, quoted
// for a POSIX shell.
func (u *Upload) PinArgs(remote string) string {
	return shquote.Quote(remote) + " " + strconv.FormatInt(u.Size, 10) + " " + u.Sum
}

// ErrPinUnchecked is the reason a target whose binary PinScript cannot
// check (exit 2) runs without it.
var ErrPinUnchecked = errors.New("shim: the target has no sha256sum and head in /usr/bin or /bin to verify the helper binary with")
