//go:build unix

package native

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// DefaultMaxBackground is how many background process groups a sandbox
// may own at once.
const DefaultMaxBackground = 64

// closeWait bounds how long Close waits for detached shims to sweep their
// trees before it kills their groups itself.
const closeWait = 2 * time.Second

// background is the registry of detached shims: commands that exited and
// left processes running, which the backend owns until they end or it
// closes.
type background struct {
	max      int
	lifeline *os.File // read end given to every shim; the write end dies with this process
	keep     *os.File // the write end

	mu    sync.Mutex
	procs map[int]*bgGroup
}

type bgGroup struct {
	pid     int
	group   int // the command's process group, when not the shim's (a pooled shim's); 0: none
	command string
	started time.Time
	log     string
	done    chan struct{}
}

func newBackground(max int) (*background, error) {
	if max <= 0 {
		max = DefaultMaxBackground
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &background{max: max, lifeline: r, keep: w, procs: map[int]*bgGroup{}}, nil
}

// full reports whether another group would exceed the limit.
func (g *background) full() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.procs) >= g.max
}

// limit returns the limit.
func (g *background) limit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max
}

// logPath names a fresh log file in dir for one command's background
// output.
func logPath(dir string) string {
	var rnd [8]byte
	rand.Read(rnd[:])
	return filepath.Join(dir, "pi-bg-"+hex.EncodeToString(rnd[:])+".log")
}

// adopt registers a detached shim; waitCh delivers its exit; group is its
// command's process group when that is not the shim's (0: it is).
func (g *background) adopt(cmd *exec.Cmd, group int, command, log string, waitCh <-chan error) {
	p := &bgGroup{pid: cmd.Process.Pid, group: group, command: command, started: time.Now(), log: log, done: make(chan struct{})}
	g.mu.Lock()
	g.procs[p.pid] = p
	g.mu.Unlock()
	go func() {
		<-waitCh
		g.mu.Lock()
		delete(g.procs, p.pid)
		g.mu.Unlock()
		close(p.done)
	}()
}

// close kills every group: a kill request to each shim (it sweeps its
// tree, setsid escapees included), then SIGKILL to what is left.
func (g *background) close() {
	g.mu.Lock()
	ps := make([]*bgGroup, 0, len(g.procs))
	for _, p := range g.procs {
		ps = append(ps, p)
	}
	g.mu.Unlock()
	for _, p := range ps {
		syscall.Kill(p.pid, syscall.SIGTERM)
	}
	deadline := time.After(closeWait)
	for _, p := range ps {
		select {
		case <-p.done:
		case <-deadline:
			syscall.Kill(-p.pid, syscall.SIGKILL)
			syscall.Kill(p.pid, syscall.SIGKILL)
			if p.group > 0 {
				syscall.Kill(-p.group, syscall.SIGKILL)
			}
		}
	}
	g.keep.Close()
	g.lifeline.Close()
}

// list describes the processes of every group (the shims themselves
// excluded), sorted by pid.
func (g *background) list() []ops.Process {
	g.mu.Lock()
	groups := make(map[int]*bgGroup, len(g.procs))
	for pid, p := range g.procs {
		groups[pid] = p
	}
	g.mu.Unlock()
	if len(groups) == 0 {
		return nil
	}
	stats := readProcs()
	var out []ops.Process
	for pid, st := range stats {
		owner := 0
		for p, hops := st.ppid, 0; p > 1 && hops < 64; hops++ {
			if _, ok := groups[p]; ok {
				owner = p
				break
			}
			next, ok := stats[p]
			if !ok {
				break
			}
			p = next.ppid
		}
		if owner == 0 {
			continue
		}
		grp := groups[owner]
		out = append(out, ops.Process{PID: pid, Started: grp.started, State: st.state, Command: st.cmdline, Group: owner, Log: grp.log})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

type procStat struct {
	ppid    int
	state   string
	cmdline string
}

// readProcs reads /proc/*/stat and cmdline of every live process.
func readProcs() map[int]procStat {
	ents, _ := os.ReadDir("/proc")
	out := make(map[int]procStat, len(ents))
	for _, e := range ents {
		pid, f := procStatFields(e.Name())
		if f == nil {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		state := stateName(f[0][0])
		if state == "zombie" {
			continue
		}
		cl, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		out[pid] = procStat{ppid: ppid, state: state, cmdline: strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))}
	}
	return out
}

// procStatFields reads /proc/NAME/stat of process NAME and returns its pid
// and the fields after the command name (the state, then the parent's pid,
// ...); nil when NAME is not a process or its stat is gone or malformed.
func procStatFields(name string) (int, [][]byte) {
	pid, err := strconv.Atoi(name)
	if err != nil {
		return 0, nil
	}
	b, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return 0, nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, nil
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 2 {
		return 0, nil
	}
	return pid, f
}

func stateName(c byte) string {
	switch c {
	case 'R':
		return "running"
	case 'S', 'I':
		return "sleeping"
	case 'D':
		return "disk-sleep"
	case 'T', 't':
		return "stopped"
	case 'Z', 'X':
		return "zombie"
	}
	return string(c)
}

// Processes lists the background processes the backend owns (processes
// that commands left running after they exited). Without Config.Background
// the list is always empty.
func (b *Backend) Processes(ctx context.Context) ([]ops.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.bg == nil {
		return nil, nil
	}
	return b.bg.list(), nil
}
