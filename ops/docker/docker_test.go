package docker

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// The engine-facing parts are tested in ../../integration against a real
// engine; these cover the parsing that needs none.

func TestErrnoFromStderr(t *testing.T) {
	for _, c := range []struct {
		stderr string
		want   ops.Errno
	}{
		{"stat: can't stat '/x': No such file or directory\n", ops.ENOENT},
		{"stat: cannot stat '/x': No such file or directory\n", ops.ENOENT},
		{"sh: can't create /x/y: nonexistent directory\n", ops.ENOENT},
		{"/bin/sh: 1: cannot create /x/y: Directory nonexistent\n", ops.ENOENT},
		{"cat: can't open '/x': Permission denied\n", ops.EACCES},
		{"cat: read error: Is a directory\n", ops.EISDIR},
		{"mkdir: can't create directory '/f/x': Not a directory\n", ops.ENOTDIR},
		{"touch: /x: Read-only file system\n", ops.EROFS},
		{"cat: write error: No space left on device\n", ops.ENOSPC},
		{"stat: can't stat '/l': Too many levels of symbolic links\n", ops.ELOOP},
		{"stat: can't stat '/l': Symbolic link loop\n", ops.ELOOP},
		{"stat: /xxx: File name too long\n", ops.ENAMETOOLONG},
		{"rmdir: '/d': Directory not empty\n", ops.ENOTEMPTY},
		{"mkdir: cannot create directory '/f': File exists\n", ops.EEXIST},
		{"noise\n" + errnoMarker + "EISDIR\n", ops.EISDIR},
		{"something else\n", ""},
	} {
		if got := errnoFromStderr(c.stderr); got != c.want {
			t.Errorf("errnoFromStderr(%q) = %q, want %q", c.stderr, got, c.want)
		}
	}
}

func TestPathErr(t *testing.T) {
	err := pathErr("open", "/w/x", "cat: can't open '/w/x': No such file or directory\n")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != "/w/x" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("pathErr = %#v", err)
	}
	err = pathErr("open", "/w/x", "weird failure\n")
	if !errors.As(err, &pe) || ops.ErrnoOf(err) != "" || pe.Err.Error() != "docker: weird failure" {
		t.Fatalf("unmapped pathErr = %#v", err)
	}
}

func TestParseStat(t *testing.T) {
	fi, err := parseStat("f", "81a4 12 1700000000")
	if err != nil || fi.Mode() != 0o644 || fi.Size() != 12 || fi.ModTime().Unix() != 1700000000 || fi.Name() != "f" {
		t.Fatalf("parseStat = %+v, %v", fi, err)
	}
	for raw, want := range map[uint32]fs.FileMode{
		0o040755: fs.ModeDir | 0o755,
		0o120777: fs.ModeSymlink | 0o777,
		0o041777: fs.ModeDir | fs.ModeSticky | 0o777,
		0o104755: fs.ModeSetuid | 0o755,
		0o010644: fs.ModeNamedPipe | 0o644,
		0o020666: fs.ModeDevice | fs.ModeCharDevice | 0o666,
	} {
		if got := unixMode(raw); got != want {
			t.Errorf("unixMode(%o) = %v, want %v", raw, got, want)
		}
	}
	if _, err := parseStat("f", "garbage"); err == nil {
		t.Error("parseStat(garbage) succeeded")
	}
}

func TestParseMount(t *testing.T) {
	m, err := ParseMount("/src:/workspace:ro")
	if err != nil || m != (Mount{Source: "/src", Target: "/workspace", ReadOnly: true}) {
		t.Fatalf("ParseMount = %+v, %v", m, err)
	}
	for _, bad := range []string{"/src", "src:/w", "/s:/w:xx", "/a:/b:ro:x"} {
		if _, err := ParseMount(bad); err == nil {
			t.Errorf("ParseMount(%q) succeeded", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for cfg, want := range map[*Config]error{
		{}:                                    ErrNoTarget,
		{Image: "i", Container: "c"}:          ErrImageAndTarget,
		{Container: "c", Mounts: []Mount{{}}}: ErrMountsNeedImage,
	} {
		if err := cfg.validate(); !errors.Is(err, want) {
			t.Errorf("validate(%+v) = %v, want %v", cfg, err, want)
		}
	}
	if err := (&Config{Image: "i", WorkDir: "rel"}).validate(); err == nil {
		t.Error("relative WorkDir accepted")
	}
	var c Config
	c.Image = "i"
	c.fillImageDefaults()
	if c.User != DefaultUser || c.WorkDir != DefaultWorkDir || c.Memory != DefaultMemory || c.PidsLimit != DefaultPidsLimit || c.CPUs != DefaultCPUs {
		t.Errorf("defaults %+v", c)
	}
	c = Config{Image: "i", Memory: -1, PidsLimit: -1, CPUs: -1}
	c.fillImageDefaults()
	if c.Memory != 0 || c.PidsLimit != 0 || c.CPUs != 0 {
		t.Errorf("negative means none: %+v", c)
	}
}

func TestCheckStaticELF(t *testing.T) {
	if err := shim.CheckStaticELF([]byte("#!/bin/sh\n"), "amd64"); err == nil {
		t.Error("a script passed as the shim")
	}
}

func TestHardenedSpec(t *testing.T) {
	cc, hc, err := HardenedSpec(Config{Image: "img", Runtime: "runsc", CPUs: 8}, KindEphemeral, 2)
	if err != nil {
		t.Fatal(err)
	}
	if hc.Runtime != "runsc" || hc.NetworkMode != "none" || !hc.ReadonlyRootfs || hc.NanoCPUs != 2e9 || hc.Memory != DefaultMemory {
		t.Errorf("HostConfig %+v", hc)
	}
	if cc.User != DefaultUser || cc.WorkingDir != DefaultWorkDir || cc.Labels[LabelKind] != KindEphemeral || cc.Labels[LabelPID] == "" {
		t.Errorf("Config %+v", cc)
	}
	if _, _, err := HardenedSpec(Config{Container: "c"}, KindSandbox, 0); !errors.Is(err, ErrNoTarget) {
		t.Errorf("HardenedSpec without Image = %v", err)
	}
	if err := (&Config{Container: "c", Runtime: "runsc"}).validate(); !errors.Is(err, ErrRuntimeNeedsImage) {
		t.Errorf("Runtime with Container: %v", err)
	}
}
