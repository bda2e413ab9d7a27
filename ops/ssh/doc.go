// Package sshops is the ssh backend of pi-sandbox: files through SFTP
// (github.com/pkg/sftp) and commands through exec sessions
// (golang.org/x/crypto/ssh) on a remote host. It is named sshops so that it
// does not shadow x/crypto/ssh.
//
// # Connections
//
// Host keys are verified against known_hosts, with HostKeyAlgorithms set
// from the recorded keys; [Config.InsecureIgnoreHostKey] is the only way to
// skip that. Aliases from ~/.ssh/config are honoured (HostName, User, Port,
// IdentityFile, ProxyJump). Nothing is forwarded.
//
// One connection multiplexes up to [Config.MaxSessionsPerConn] sessions (8,
// under sshd's default MaxSessions of 10; the SFTP client holds one). When
// every connection is full, or a server refuses a session (MaxSessions shows
// as an OpenChannelError with reason ConnectionFailed), another connection is
// dialled, one at a time so sshd's MaxStartups is not tripped. A keepalive
// every [Config.KeepAlive] closes a connection after three missed replies;
// calls in flight on a dropped connection fail with an error wrapping
// [ops.ErrTransport], and the next call dials again.
//
// # Files
//
// SFTP with 255 KiB packets and concurrent reads and writes. OpenSSH's
// sftp-server folds errnos into few status codes (ENOTDIR and ELOOP become
// "no such file", most others "failure"); the backend looks at the file
// system to recover the errno, so errors are the same as on the other
// backends. WriteFile is atomic through posix-rename@openssh.com. Access
// compares permission bits with the user's uid and groups, because SFTP has
// no access(2).
//
// # Commands
//
// sshd runs every exec request through the user's login shell, which for
// bash sources ~/.bashrc: a slow rc file costs its time on every command
// (measured on loopback: Run("true") 33 ms for a clean user, 370 ms with a
// 300 ms rc file; the wrapper keeps bash from sourcing it a second time).
// SFTP with OpenSSH's sftp-server subsystem also starts through the login
// shell, once per connection. An rc file that prints does not leak into
// command output (the wrapper's stdout starts with a marker; earlier bytes
// are dropped) and does not break SFTP (when the subsystem's stream is
// corrupt, sftp-server is started as a command behind the same marker).
//
// Each Run is one session running a small /bin/sh wrapper (wrap.go) that
// starts the command with setsid, under the shim when it could be uploaded
// (ops/shim: it also kills processes that call setsid themselves), merges
// stderr into stdout at the source, reports the process group, the exit
// status and the end of the output on the session's stderr, and kills the
// group when the session's stdin closes — also when sshd closes it because
// the connection dropped. A cancel or timeout closes stdin, kills the
// recorded group from a second session (OpenSSH before 10.0 refuses signal
// requests for root logins) and sends a KILL signal request as well.
//
// The shim is uploaded by SFTP once per host and binary, to a content
// addressed path next to the spill directories (~/.cache/pi-sandbox), when
// the remote host is Linux on the same architecture; otherwise Info.Limits
// says that a setsid escapee survives.
//
// Limits: a command string longer than the remote kernel's single-argument
// limit (128 KiB on Linux) cannot be run; the user's login shell must take
// a single-quoted string spanning lines (sh, bash, dash, ksh, zsh and fish
// do; csh and tcsh do not); Access compares permission bits (no ACLs).
package sshops
