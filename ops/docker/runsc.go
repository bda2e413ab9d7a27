package docker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// RunscProcess is a gVisor process (runsc-sandbox or runsc-gofer) of a
// Docker container on this host. One whose container the engine no longer
// lists is an orphan: a runsc container whose start failed can leave them
// behind.
type RunscProcess struct {
	PID       int
	Name      string // "runsc-sandbox" or "runsc-gofer"
	Container string // the container id on its command line
	Age       time.Duration
}

// runscMinAge keeps a container that is being created or removed right now
// out of the report: its processes may exist a moment before the engine
// lists it, or after it stopped listing it.
const runscMinAge = time.Minute

// dockerTaskID finds the container id in a runsc command line: Docker's
// containerd namespace is "moby", and its bundle and log paths end in
// .../moby/<id>. Processes of other engines (containerd, Podman) do not
// match and are never reported.
var dockerTaskID = regexp.MustCompile(`/moby/([0-9a-f]{64})(/|\x00|$)`)

// RunscProcesss returns the runsc-sandbox and runsc-gofer processes on this
// host, older than a minute, whose Docker container the engine does not
// list. It looks at this host's /proc, so only an engine on a local unix
// socket is checked (nil otherwise).
func RunscOrphans(ctx context.Context, cli *client.Client) ([]RunscProcess, error) {
	if !strings.HasPrefix(cli.DaemonHost(), "unix://") {
		return nil, nil
	}
	procs, err := runscProcesses("/proc")
	if err != nil || len(procs) == 0 {
		return nil, err
	}
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return nil, transportErr("container list", err)
	}
	listed := map[string]bool{}
	for _, c := range res.Items {
		listed[c.ID] = true
	}
	var out []RunscProcess
	for _, p := range procs {
		if !listed[p.Container] && p.Age >= runscMinAge {
			out = append(out, p)
		}
	}
	return out, nil
}

// KillRunscProcess kills p with SIGKILL after checking that its pid still
// is the same runsc process (the pid may have been reused).
func KillRunscOrphan(p RunscProcess) error {
	now, err := readRunscProcess("/proc", p.PID)
	if err != nil || now == nil || now.Container != p.Container || now.Name != p.Name {
		return nil // gone
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("docker: kill %s %d: %w", p.Name, p.PID, err)
	}
	return nil
}

// RunscProcesses lists the runsc processes of Docker containers on this
// host.
func RunscProcesses() ([]RunscProcess, error) { return runscProcesses("/proc") }

// runscProcesses lists the Docker runsc processes under procDir.
func runscProcesses(procDir string) ([]RunscProcess, error) {
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	var out []RunscProcess
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, _ := readRunscProcess(procDir, pid); p != nil {
			out = append(out, *p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

// readRunscProcess returns pid as a runsc process of a Docker container,
// or nil when it is something else (or gone).
func readRunscProcess(procDir string, pid int) (*RunscProcess, error) {
	dir := filepath.Join(procDir, strconv.Itoa(pid))
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return nil, err
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	name := string(argv0)
	if name != "runsc-sandbox" && name != "runsc-gofer" {
		return nil, nil
	}
	m := dockerTaskID.FindSubmatch(cmdline)
	if m == nil {
		return nil, nil
	}
	return &RunscProcess{PID: pid, Name: name, Container: string(m[1]), Age: processAge(procDir, dir)}, nil
}

// processAge is how long the process has run (from its start time in
// /proc/PID/stat and the uptime; clock ticks at USER_HZ 100); 0 when
// unknown.
func processAge(procDir, dir string) time.Duration {
	stat, err1 := os.ReadFile(filepath.Join(dir, "stat"))
	up, err2 := os.ReadFile(filepath.Join(procDir, "uptime"))
	if err1 != nil || err2 != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after ")" start
	// with field 3 (state); starttime is field 22.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return 0
	}
	start, err := strconv.ParseFloat(f[19], 64)
	uf := strings.Fields(string(up))
	if err != nil || len(uf) == 0 {
		return 0
	}
	uptime, err := strconv.ParseFloat(uf[0], 64)
	if err != nil || uptime < start/100 {
		return 0
	}
	return time.Duration((uptime - start/100) * float64(time.Second))
}
