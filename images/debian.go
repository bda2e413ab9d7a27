package images

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DebianPackages are installed into pi-sandbox/debian on top of minbase.
var DebianPackages = []string{
	"bash", "coreutils", "findutils", "grep", "sed", "procps", "util-linux",
	"ripgrep", "fd-find", "git", "curl", "ca-certificates",
}

// DebianSuite is the Debian release the images are made of.
const DebianSuite = "bookworm"

func init() {
	Register(Image{
		Name:    "pi-sandbox/debian",
		Summary: "Debian " + DebianSuite + " minbase + bash, coreutils, ripgrep, fd-find, git, curl (about a minute)",
		Key:     func() ([]byte, error) { return DebianKey("debian v1", DebianPackages) },
		Build: func(ctx context.Context, b *Builder, ref string) error {
			return b.BuildDebian(ctx, ref, DebianPackages, "")
		},
	})
}

// aptSources returns the host's Debian apt source files (sources.list or
// deb822 .sources), which the bootstrap uses as its mirrors so the build
// goes wherever the host's apt goes.
func aptSources() ([]string, error) {
	var out []string
	cands := []string{"/etc/apt/sources.list"}
	more, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	cands = append(cands, more...)
	for _, f := range cands {
		if !strings.HasSuffix(f, ".list") && !strings.HasSuffix(f, ".sources") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// Third-party repositories need keys the new system lacks.
		if !strings.Contains(string(b), "/debian") || !strings.Contains(string(b), DebianSuite) {
			continue
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, errors.New("no Debian " + DebianSuite + " apt sources on the host (/etc/apt/sources.list*)")
	}
	return out, nil
}

// DebianKey is the content key of a Debian-based recipe: its name, the
// packages and the host's apt sources.
func DebianKey(recipe string, pkgs []string) ([]byte, error) {
	srcs, err := aptSources()
	if err != nil {
		return nil, err
	}
	key := recipe + "\n" + DebianSuite + "\n" + strings.Join(pkgs, ",") + "\n" + debianHook + "\n"
	for _, s := range srcs {
		b, _ := os.ReadFile(s)
		key += s + "\n" + string(b)
	}
	return []byte(key), nil
}

// debianHook runs in the finished tree ($1): the sandbox user and the
// directories the docker backend mounts volumes on.
var debianHook = fmt.Sprintf(`set -e
echo '%[1]s:x:%[2]d:%[3]d:%[1]s:%[4]s:/bin/bash' >> "$1/etc/passwd"
echo '%[1]s:x:%[3]d:' >> "$1/etc/group"
echo '%[1]s:*:19000:0:99999:7:::' >> "$1/etc/shadow"
mkdir -p "$1%[4]s" "$1%[5]s" "$1%[6]s"
chown %[2]d:%[3]d "$1%[4]s" "$1%[5]s" "$1%[6]s"
rm -rf "$1/var/cache/apt/archives/"*.deb "$1/var/lib/apt/lists/"*
`, UserName, UserUID, UserGID, UserHome, Workspace, StateDir)

// BuildDebian bootstraps Debian minbase with pkgs, runs extraHook (a sh
// script; $1 is the new root) after the standard one, and imports it as ref.
// It uses mmdebstrap when installed (faster; streams a tar), else
// debootstrap. Either needs root.
func (b *Builder) BuildDebian(ctx context.Context, ref string, pkgs []string, extraHook string) error {
	srcs, err := aptSources()
	if err != nil {
		return err
	}
	hook := debianHook + extraHook
	if p, err := exec.LookPath("mmdebstrap"); err == nil && b.Bootstrapper != "debootstrap" {
		args := []string{"--variant=minbase", "--include=" + strings.Join(pkgs, ","),
			"--customize-hook=" + hook, "--format=tar", DebianSuite, "-"}
		args = append(args, srcs...)
		return b.importCommand(ctx, ref, exec.CommandContext(ctx, p, args...))
	}
	p, err := exec.LookPath("debootstrap")
	if err != nil {
		return errors.New("neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap)")
	}
	mirror, err := firstMirror(srcs)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "pi-sandbox-debian-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, p, "--variant=minbase", "--include="+strings.Join(pkgs, ","), DebianSuite, dir, mirror)
	if err := b.runLogged(ctx, ref, cmd); err != nil {
		return err
	}
	if err := b.runLogged(ctx, ref, exec.CommandContext(ctx, "/bin/sh", "-c", hook, "sh", dir)); err != nil {
		return err
	}
	return b.importCommand(ctx, ref, exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", dir, "-cf", "-", "."))
}

// importCommand imports the tar stream cmd writes on stdout, logging its
// stderr as progress.
func (b *Builder) importCommand(ctx context.Context, ref string, cmd *exec.Cmd) error {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	logDone := make(chan []string, 1)
	go func() { logDone <- b.logLines(ref, errPipe) }()
	ierr := b.Import(ctx, ref, out, debianChanges)
	if ierr != nil {
		// Unblock the producer.
		io.Copy(io.Discard, out)
	}
	tail := <-logDone
	werr := cmd.Wait()
	if werr != nil {
		return fmt.Errorf("%s: %w\n%s", cmd.Args[0], werr, strings.Join(tail, "\n"))
	}
	return ierr
}

var debianChanges = []string{"ENV " + basePath, `CMD ["/bin/bash"]`, "WORKDIR " + Workspace}

func (b *Builder) runLogged(ctx context.Context, ref string, cmd *exec.Cmd) error {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	logDone := make(chan []string, 1)
	go func() { logDone <- b.logLines(ref, pr) }()
	err := cmd.Run()
	pw.Close()
	tail := <-logDone
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", cmd.Args[0], err, strings.Join(tail, "\n"))
	}
	return nil
}

// logLines copies lines from r to the progress writer, prefixed, and
// returns the last few for an error message.
func (b *Builder) logLines(ref string, r io.Reader) []string {
	var tail []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		b.logf("%s: %s", ref, l)
		tail = append(tail, l)
		if len(tail) > 20 {
			tail = tail[1:]
		}
	}
	io.Copy(io.Discard, r)
	return tail
}

// firstMirror returns the first Debian URI in the sources files (for
// debootstrap, which takes one mirror).
func firstMirror(srcs []string) (string, error) {
	for _, s := range srcs {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) >= 2 && f[0] == "URIs:" && !strings.Contains(f[1], "security"):
				return f[1], nil
			case len(f) >= 3 && f[0] == "deb" && !strings.Contains(l, "security"):
				for _, w := range f[1:] {
					if strings.Contains(w, "://") {
						return w, nil
					}
				}
			}
		}
	}
	return "", errors.New("no Debian mirror in the host's apt sources")
}
