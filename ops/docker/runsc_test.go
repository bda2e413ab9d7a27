package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunscProcesses(t *testing.T) {
	proc := t.TempDir()
	id := strings.Repeat("ab", 32)
	write := func(pid, cmdline, stat string) {
		d := filepath.Join(proc, pid)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "cmdline"), []byte(cmdline), 0o644)
		os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644)
	}
	os.WriteFile(filepath.Join(proc, "uptime"), []byte("1000.00 1900.00\n"), 0o644)
	// starttime (field 22) 40000 ticks = 400 s after boot: 600 s old.
	stat := func(pid string) string {
		return pid + " (exe) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 40000 0 0"
	}
	task := "/var/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby/" + id
	write("10", "runsc-sandbox\x00--root=/var/run/docker/runtime-runc/moby\x00--log="+task+"/log.json\x00boot\x00--bundle="+task+"\x00"+id+"\x00", stat("10"))
	write("11", "runsc-gofer\x00--log="+task+"/log.json\x00gofer\x00--bundle\x00"+task+"\x00", stat("11"))
	write("12", "runsc-sandbox\x00--root=/run/containerd/runsc/k8s.io\x00boot\x00"+id+"\x00", stat("12")) // not Docker's
	write("13", "/usr/bin/runsc\x00--log="+task+"/log.json\x00", stat("13"))                              // the CLI, not a sandbox
	write("self", "x", "x")
	got, err := runscProcesses(proc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].PID != 10 || got[0].Name != "runsc-sandbox" || got[0].Container != id ||
		got[1].PID != 11 || got[1].Name != "runsc-gofer" || got[1].Container != id {
		t.Fatalf("runscProcesses = %+v", got)
	}
	if got[0].Age != 600*time.Second {
		t.Errorf("Age = %v, want 10m", got[0].Age)
	}
}
