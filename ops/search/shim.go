package search

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/pi-sandbox/pi-sandbox/internal/shquote"
	"github.com/pi-sandbox/pi-sandbox/ops"
)

// The shim protocol. The client runs
//
//	<shim> __shim grep '<GrepQuery JSON>'
//	<shim> __shim find '<FindQuery JSON>'
//
// and the shim writes one JSON object per line on stdout: a result
// (GrepEvent JSON, or {"rel":"…"} for find), and finally one status line
// {"status":"ok"} or {"status":"error",…} (see shimStatus). Text bytes travel
// as base64 (GrepEvent.Text is []byte); paths travel as JSON strings.

type shimStatus struct {
	Status     string `json:"status"` // "ok" or "error"
	Error      string `json:"error,omitempty"`
	BadPattern string `json:"badPattern,omitempty"` // "regex" or "glob"
	Glob       string `json:"glob,omitempty"`
	Errno      string `json:"errno,omitempty"` // with Op and Path: a *fs.PathError
	Op         string `json:"op,omitempty"`
	ErrPath    string `json:"errPath,omitempty"`
}

// shimLine is the union of what a line can hold. A path that is not valid
// UTF-8 travels as base64 bytes (pathBytes, relBytes) instead: a JSON string
// would replace its invalid bytes.
type shimLine struct {
	shimStatus
	ops.GrepEvent
	PathBytes []byte  `json:"pathBytes,omitempty"`
	Rel       *string `json:"rel,omitempty"`
	RelBytes  []byte  `json:"relBytes,omitempty"`
}

// What the shim writes per result; shimLine reads any of them.
type (
	grepBytesLine struct {
		ops.GrepEvent
		PathBytes []byte `json:"pathBytes"`
	}
	findLine struct {
		Rel      *string `json:"rel,omitempty"`
		RelBytes []byte  `json:"relBytes,omitempty"`
	}
)

func statusOf(err error) shimStatus {
	if err == nil {
		return shimStatus{Status: "ok"}
	}
	st := shimStatus{Status: "error", Error: err.Error()}
	var pe *PatternError
	var ge *GlobError
	if errors.As(err, &pe) {
		st.BadPattern, st.Error = "regex", pe.Detail
	} else if errors.As(err, &ge) {
		st.BadPattern, st.Glob, st.Error = "glob", ge.Glob, ge.Detail
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		if code := ops.ErrnoOf(pathErr.Err); code != "" {
			st.Errno, st.Op, st.ErrPath = string(code), pathErr.Op, pathErr.Path
		}
	}
	return st
}

func (st *shimStatus) err() error {
	switch {
	case st.Status == "ok":
		return nil
	case st.BadPattern == "regex":
		return &PatternError{Detail: st.Error}
	case st.BadPattern == "glob":
		return &GlobError{Glob: st.Glob, Detail: st.Error}
	case st.Errno != "":
		return ops.PathError(st.Op, st.ErrPath, ops.Errno(st.Errno))
	}
	return errors.New(st.Error)
}

// marshalNoEscape is json.Marshal without HTML escaping or a newline.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// shimQuery reads the query from args[0], or from stdin when args is empty.
func shimQuery(args []string, stdin io.Reader, v any) error {
	var data []byte
	if len(args) > 0 {
		data = []byte(args[0])
	} else {
		var err error
		if data, err = io.ReadAll(stdin); err != nil {
			return err
		}
	}
	return json.Unmarshal(data, v)
}

func shimRun(stdout io.Writer, run func(emit func(v any) error) error) int {
	bw := bufio.NewWriterSize(stdout, 32<<10)
	emit := func(v any) error {
		b, err := marshalNoEscape(v)
		if err != nil {
			return err
		}
		b = append(b, '\n')
		_, err = bw.Write(b)
		return err
	}
	err := run(emit)
	code := 0
	if err != nil {
		code = 2
	}
	if werr := emit(statusOf(err)); werr != nil {
		return 2
	}
	if bw.Flush() != nil {
		return 2
	}
	return code
}

// ShimGrep is the shim's "grep" mode: it reads a GrepQuery (args[0], or stdin
// when args is empty), runs the engine over the local file system and writes
// the events as JSON lines, then a status line. It returns the exit code:
// 0 on success, 2 on error.
func ShimGrep(args []string, stdin io.Reader, stdout io.Writer) int {
	return shimRun(stdout, func(emit func(any) error) error {
		var q ops.GrepQuery
		if err := shimQuery(args, stdin, &q); err != nil {
			return fmt.Errorf("search: shim grep: bad query: %w", err)
		}
		return GrepFS(context.Background(), osFS{}, &q, func(ev ops.GrepEvent) error {
			if utf8.ValidString(ev.Path) {
				return emit(ev)
			}
			return emit(grepBytesLine{GrepEvent: ops.GrepEvent{Line: ev.Line, Match: ev.Match, Text: ev.Text}, PathBytes: []byte(ev.Path)})
		})
	})
}

// ShimFind is the shim's "find" mode, the counterpart of ShimGrep for a
// FindQuery; each result is {"rel":"…"}.
func ShimFind(args []string, stdin io.Reader, stdout io.Writer) int {
	return shimRun(stdout, func(emit func(any) error) error {
		var q ops.FindQuery
		if err := shimQuery(args, stdin, &q); err != nil {
			return fmt.Errorf("search: shim find: bad query: %w", err)
		}
		return FindFS(context.Background(), osFS{}, &q, func(rel string) error {
			if utf8.ValidString(rel) {
				return emit(findLine{Rel: &rel})
			}
			return emit(findLine{RelBytes: []byte(rel)})
		})
	})
}

// viaShim runs one shim mode in the target and feeds each result line to
// handle. A failing handle stops the remote process.
func viaShim(ctx context.Context, r ops.Runner, shimPath, mode string, q any, handle func(l *shimLine) error) error {
	qj, err := marshalNoEscape(q)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var status *shimStatus
	var other []string
	w := &lineWriter{cancel: cancel}
	w.handle = func(line []byte) error {
		var l shimLine
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &l) != nil {
			other = append(other, string(line))
			return nil
		}
		if l.Status != "" {
			st := l.shimStatus
			status = &st
			return nil
		}
		return handle(&l)
	}
	cmd := shquote.Quote(shimPath) + " __shim " + mode + " " + shquote.Quote(string(qj))
	runErr := r.Run(runCtx, &ops.Cmd{Command: cmd, Dir: "/", Output: w})
	w.flush()
	if w.err != nil {
		return w.err
	}
	if status != nil {
		return status.err()
	}
	if runErr != nil {
		return &shimRunError{mode: mode, err: runErr, output: strings.TrimSpace(strings.Join(other, "\n"))}
	}
	return fmt.Errorf("search: shim %s: no status line", mode)
}

// shimRunError is a shim run that ended without a status line.
type shimRunError struct {
	mode   string
	err    error
	output string
}

func (e *shimRunError) Error() string {
	if e.output == "" {
		return "search: shim " + e.mode + ": " + e.err.Error()
	}
	return "search: shim " + e.mode + ": " + e.err.Error() + ": " + e.output
}

func (e *shimRunError) Unwrap() error { return e.err }

// GrepViaShim runs the query with the shim at shimPath in the target.
func GrepViaShim(ctx context.Context, r ops.Runner, shimPath string, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return viaShim(ctx, r, shimPath, "grep", q, func(l *shimLine) error {
		if l.PathBytes != nil {
			l.GrepEvent.Path = string(l.PathBytes)
		}
		return fn(l.GrepEvent)
	})
}

// FindViaShim runs the query with the shim at shimPath in the target.
func FindViaShim(ctx context.Context, r ops.Runner, shimPath string, q *ops.FindQuery, fn func(rel string) error) error {
	return viaShim(ctx, r, shimPath, "find", q, func(l *shimLine) error {
		switch {
		case l.RelBytes != nil:
			return fn(string(l.RelBytes))
		case l.Rel != nil:
			return fn(*l.Rel)
		}
		return nil
	})
}
