package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"
)

// BusyboxBinary is where Debian's busybox-static installs its binary.
var BusyboxBinary = "/bin/busybox"

func init() {
	Register(Image{
		Name:    "pi-sandbox/busybox",
		Summary: "FROM scratch + Debian's busybox-static (seconds)",
		Key:     busyboxKey,
		Build:   buildBusybox,
	})
}

const busyboxRecipe = "busybox v1\n"

func busyboxKey() ([]byte, error) {
	bin, err := os.ReadFile(BusyboxBinary)
	if err != nil {
		return nil, fmt.Errorf("read %s (apt-get install busybox-static): %w", BusyboxBinary, err)
	}
	return append([]byte(busyboxRecipe+passwd("/bin/sh")+group()), bin...), nil
}

func passwd(shell string) string {
	return "root:x:0:0:root:/root:" + shell + "\n" +
		fmt.Sprintf("%s:x:%d:%d:%s:%s:%s\n", UserName, UserUID, UserGID, UserName, UserHome, shell) +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
}

func group() string {
	return fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", UserName, UserGID)
}

func buildBusybox(ctx context.Context, b *Builder, ref string) error {
	bin, err := os.ReadFile(BusyboxBinary)
	if err != nil {
		return err
	}
	list, err := exec.CommandContext(ctx, BusyboxBinary, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("%s --list-full: %w", BusyboxBinary, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Unix(0, 0)
	var werr error // the first tar error; later writes are no-ops
	header := func(h *tar.Header) {
		if werr == nil {
			werr = tw.WriteHeader(h)
		}
	}
	dir := func(name string, mode int64, uid int) {
		header(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: now})
	}
	file := func(name string, mode int64, data []byte) {
		header(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: now})
		if werr == nil {
			_, werr = tw.Write(data)
		}
	}
	for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "usr/local", "usr/local/bin",
		"etc", "home", "var", "var/lib", "dev", "proc", "sys", "run"} {
		dir(d, 0o755, 0)
	}
	dir("root", 0o700, 0)
	dir("tmp", 0o1777, 0)
	dir("var/tmp", 0o1777, 0)
	for _, d := range []string{UserHome, Workspace, StateDir} {
		dir(strings.TrimPrefix(d, "/"), 0o755, UserUID)
	}
	file("bin/busybox", 0o755, bin)
	file("etc/passwd", 0o644, []byte(passwd("/bin/sh")))
	file("etc/group", 0o644, []byte(group()))
	n := 0
	for _, l := range strings.Fields(string(list)) {
		l = strings.TrimPrefix(l, "/")
		if l == "bin/busybox" || l == "" {
			continue
		}
		// Only the directories created above; busybox lists a few applets
		// under linuxrc and the like.
		switch path.Dir(l) {
		case "bin", "sbin", "usr/bin", "usr/sbin":
		default:
			continue
		}
		header(&tar.Header{Typeflag: tar.TypeSymlink, Name: l, Linkname: "/bin/busybox", Mode: 0o777, ModTime: now})
		n++
	}
	if werr != nil {
		return werr
	}
	if err := tw.Close(); err != nil {
		return err
	}
	b.logf("%s: %d applets, %d KiB", ref, n, buf.Len()>>10)
	return b.Import(ctx, ref, io.Reader(&buf), []string{
		"ENV " + basePath,
		`CMD ["/bin/sh"]`,
		"WORKDIR " + Workspace,
	})
}
