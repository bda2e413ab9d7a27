package shim

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func killMain(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("__shim kill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wait := fs.Duration("wait", 5*time.Second, "wait at most `DURATION` for the shim to exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "pi-sandbox-shim: kill: want one pid FILE")
		return 2
	}
	b, err := os.ReadFile(fs.Arg(0))
	if errors.Is(err, os.ErrNotExist) {
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "pi-sandbox-shim: kill: %v\n", err)
		return 1
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		fmt.Fprintf(stderr, "pi-sandbox-shim: kill: bad pid file %s\n", fs.Arg(0))
		return 1
	}
	if !isShim(pid) {
		return 0 // gone, and its pid may have been reused: touch nothing
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		fmt.Fprintf(stderr, "pi-sandbox-shim: kill %d: %v\n", pid, err)
		return 1
	}
	deadline := time.Now().Add(*wait)
	for alive(pid) {
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "pi-sandbox-shim: kill: %d still alive after %s\n", pid, *wait)
			return 1
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0
}

func isShim(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(b, []byte("\x00"+Subcommand+"\x00")) && alive(pid)
}
