package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestServeAnswersBeforeEOF: a client that writes its requests and closes
// stdin gets every answer before serve exits — tools/list right after
// initialize, after a garbage line, and a tool call still running when
// stdin ends.
func TestServeAnswersBeforeEOF(t *testing.T) {
	serveEnv(t)
	const (
		initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		list        = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		call        = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 0.3; echo finished"}}}`
	)
	for _, c := range []struct {
		name  string
		lines []string
		want  map[string]string // id → a text the answer holds
		runs  int
	}{
		{"list", []string{initialize, initialized, list}, map[string]string{"1": `"serverInfo"`, "2": `"name":"bash"`}, 20},
		{"garbage first", []string{initialize, initialized, "garbage", list}, map[string]string{"1": `"serverInfo"`, "2": `"name":"bash"`}, 20},
		{"call in flight", []string{initialize, initialized, call, list}, map[string]string{"2": `"name":"bash"`, "3": `finished\n`}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for i := range c.runs {
				cmd := exec.Command("pi-sandbox", "serve", "--workdir", dir)
				cmd.Stdin = strings.NewReader(strings.Join(c.lines, "\n") + "\n")
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("run %d: %v (stderr %s)", i, err, &stderr)
				}
				got := map[string]string{}
				sc := bufio.NewScanner(&stdout)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					var l rpcLine
					if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
						t.Fatalf("run %d: serve wrote %q: %v", i, sc.Text(), err)
					}
					if l.Method == "" {
						got[string(l.ID)] = sc.Text()
					}
				}
				for id, text := range c.want {
					if !strings.Contains(got[id], text) {
						t.Fatalf("run %d: answer to id %s is %q, want it to hold %s (stdout %s, stderr %s)", i, id, got[id], text, &stdout, &stderr)
					}
				}
			}
		})
	}
}
