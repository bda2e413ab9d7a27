package integration

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// TestSSHTimeoutTrials repeats a timeout of a process tree (background
// jobs, a double fork, a setsid escapee) and checks after each that nothing
// the command started is alive and that Run returned promptly. It is the
// long trial loop of `make faults`: set PI_SANDBOX_TRIALS=N (e.g. 200).
func TestSSHTimeoutTrials(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PI_SANDBOX_TRIALS"))
	if n <= 0 {
		t.Skip("set PI_SANDBOX_TRIALS=N to run N timeout trials")
	}
	s := sshtest.Start(t)
	b := openSSH(t, s, s.Config())
	escapee := b.Info().Has("shim")
	command := "sleep 100 & (sleep 101 &); echo ready; wait"
	if escapee {
		command = "setsid sleep 102 & " + command
	}
	var worst time.Duration
	for i := range n {
		limit := time.Duration(50+(i%5)*50) * time.Millisecond
		start := time.Now()
		err := b.Run(context.Background(), &ops.Cmd{Command: command, Timeout: limit})
		var te *ops.TimeoutError
		if !errors.As(err, &te) {
			t.Fatalf("trial %d: want a timeout, got %v", i, err)
		}
		if d := time.Since(start) - limit; d > worst {
			worst = d
		}
		// Every process of the throwaway user other than this check's own.
		left := runOut(t, b, `ps -u $(id -u) -o stat=,args= | awk '$1 !~ /^Z/ && /sleep 10[012]/ && !/awk/'`)
		if strings.TrimSpace(left) != "" {
			t.Fatalf("trial %d: survivors:\n%s", i, left)
		}
	}
	t.Logf("%d trials (setsid escapee: %v); worst return after the limit: %v", n, escapee, worst)
}
