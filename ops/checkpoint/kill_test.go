package checkpoint

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/checkpoint/treetest"
)

// TestMain lets the test binary be the child that TestKilledRestore
// kills: with PI_CHECKPOINT_CHILD=STORE:ROOT:A:B it restores A and B by
// turns until killed, saying "go" first.
func TestMain(m *testing.M) {
	if v := os.Getenv("PI_CHECKPOINT_CHILD"); v != "" {
		f := strings.Split(v, "\n")
		s, err := Open(f[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("go")
		for i := 0; ; i++ {
			if _, _, err := s.Restore(f[1], f[2+i%2]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
	os.Exit(m.Run())
}

// TestKilledRestore: a restore killed at random points leaves every file
// old or new, never partial; the next call completes the restore and the
// store stays usable.
func TestKilledRestore(t *testing.T) {
	defer func(d bool) { durable = d }(durable)
	durable = false
	root := t.TempDir()
	s := openStore(t)
	content := func(side string, i int) []byte {
		return []byte(strings.Repeat(fmt.Sprintf("%s %d\n", side, i), 4000))
	}
	write := func(side string) {
		treetest.Clear(t, root)
		for i := 0; i < 100; i++ {
			p := filepath.Join(root, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%d", i))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if side == "b" && i%3 == 0 {
				continue // absent in b
			}
			if err := os.WriteFile(p, content(side, i), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("a")
	snapA := treetest.Snapshot(t, root)
	a := mustCreate(t, s, root, Options{Name: "a"})
	write("b")
	snapB := treetest.Snapshot(t, root)
	b := mustCreate(t, s, root, Options{Name: "b"})
	exe, _ := os.Executable()
	r := rand.New(rand.NewSource(2))
	midway := 0
	defer func() { t.Logf("%d of 20 kills landed during a restore's changes", midway) }()
	for k := 0; k < 20; k++ {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "PI_CHECKPOINT_CHILD="+strings.Join([]string{s.Dir(), root, a.ID, b.ID}, "\n"))
		out, _ := cmd.StdoutPipe()
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "go\n" {
			cmd.Wait()
			t.Fatalf("child: %q, %s", line, errb.String())
		}
		// Where the kill lands is what varies (not a readiness wait).
		time.Sleep(time.Duration(r.Intn(200)) * time.Millisecond)
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if _, err := os.Stat(s.journalPath()); err == nil {
			midway++
		}
		// Every file is a's or b's, whole.
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			var i int
			if _, err := fmt.Sscanf(filepath.Base(rel), "f%d", &i); err != nil {
				if strings.Contains(rel, ".pi-restore-") {
					return nil // a temporary file the next call removes
				}
				t.Errorf("kill %d: unexpected %s", k, rel)
				return nil
			}
			data, _ := os.ReadFile(p)
			if string(data) != string(content("a", i)) && string(data) != string(content("b", i)) {
				t.Errorf("kill %d: %s is partial (%d bytes)", k, rel, len(data))
			}
			return nil
		})
		if _, err := s.Changes(root, "", ""); err != nil { // completes the restore
			t.Fatal(err)
		}
		if got := treetest.Snapshot(t, root); got != snapA && got != snapB {
			t.Fatalf("kill %d: after the next call the tree is neither a nor b:\n%s", k, got)
		}
		if _, err := os.Stat(s.journalPath()); !os.IsNotExist(err) {
			t.Fatalf("kill %d: journal left: %v", k, err)
		}
	}
	if _, _, err := s.Restore(root, "a"); err != nil {
		t.Fatal(err)
	}
	if got := treetest.Snapshot(t, root); got != snapA {
		t.Error("the store no longer restores a")
	}
}

// TestConcurrentCheckpoints: operations on one store from several
// goroutines serialize (the lock); each checkpoint is whole.
func TestConcurrentCheckpoints(t *testing.T) {
	root := t.TempDir()
	s := openStore(t)
	for i := 0; i < 20; i++ {
		os.WriteFile(filepath.Join(root, fmt.Sprint(i)), []byte(fmt.Sprint(i)), 0o644)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Create(root, Options{}); err != nil {
				errs <- err
			}
			if _, err := s.List(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, _ := s.List()
	seqs := map[int64]bool{}
	for _, c := range all {
		if c.Files != 20 || seqs[c.Seq] {
			t.Errorf("checkpoint %+v", c)
		}
		seqs[c.Seq] = true
	}
	if len(all) != 8 {
		t.Errorf("%d checkpoints, want 8", len(all))
	}
}
