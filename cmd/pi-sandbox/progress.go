package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"golang.org/x/term"
)

// progress shows a session to a person. On a terminal it keeps a live
// block at the bottom — each running call with its arguments summarised,
// its elapsed time and the tail of its streaming output — above which
// finished calls are written once, with their durations; elsewhere it
// writes a plain log. A final summary ends both.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	width int
	now   func() time.Time
	start time.Time

	turns, calls, failed int
	usage                loop.Usage
	hasUsage             bool
	final                string // the last assistant text, printed at the end
	running              []*runningCall
	live                 int // lines of the live block on screen

	stop chan struct{}
	done chan struct{}
}

type runningCall struct {
	id, name, summary string
	start             time.Time
	tail              []string
}

const (
	tailLines    = 3
	tickInterval = 100 * time.Millisecond
)

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newProgress(w io.Writer, tty bool) *progress {
	p := newProgressClock(w, tty, time.Now)
	if tty {
		if f, ok := w.(*os.File); ok {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
				p.width = cols
			}
		}
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.tick()
	}
	return p
}

// newProgressClock makes a progress without the redraw ticker (tests drive
// redraws themselves).
func newProgressClock(w io.Writer, tty bool, now func() time.Time) *progress {
	return &progress{w: w, tty: tty, width: 80, now: now, start: now()}
}

// tick redraws the live block so elapsed times move while calls run.
func (p *progress) tick() {
	defer close(p.done)
	t := time.NewTicker(tickInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if len(p.running) > 0 {
				p.redraw()
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) emit(ev loop.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := ev.(type) {
	case loop.TurnStart:
		p.turns++
		p.println(fmt.Sprintf("── turn %d", p.turns))
	case loop.MessageEnd:
		switch m := e.Message.(type) {
		case *loop.UserMessage:
			for _, c := range m.Content {
				p.text("user", c.Text)
			}
		case *loop.AssistantMessage:
			var text []string
			for _, c := range m.Content {
				if c.Type == "text" {
					p.text("assistant", c.Text)
					text = append(text, c.Text)
				}
			}
			if t := strings.TrimSpace(strings.Join(text, "\n")); t != "" {
				p.final = t
			}
			if m.Usage != nil {
				p.usage.Add(m.Usage)
				p.hasUsage = true
			}
			if m.StopReason == loop.StopError || m.StopReason == loop.StopAborted {
				p.println(fmt.Sprintf("  ✗ %s: %s", m.StopReason, m.ErrorMessage))
			}
		}
	case loop.ToolExecutionStart:
		rc := &runningCall{id: e.ToolCallID, name: e.ToolName, summary: summarizeArgs(e.Args), start: p.now()}
		p.running = append(p.running, rc)
		if p.tty {
			p.redraw()
		} else {
			p.println(fmt.Sprintf("  → %s %s", rc.name, rc.summary))
		}
	case loop.ToolExecutionUpdate:
		if rc := p.find(e.ToolCallID); rc != nil && e.PartialResult != nil {
			rc.tail = lastLines(resultText(e.PartialResult), tailLines)
			if p.tty {
				p.redraw()
			}
		}
	case loop.ToolExecutionEnd:
		p.calls++
		if e.IsError {
			p.failed++
		}
		summary := ""
		if rc := p.find(e.ToolCallID); rc != nil {
			summary = " " + rc.summary
			p.remove(rc)
		}
		mark, dur := "✓", ""
		if e.IsError {
			mark = "✗"
		}
		if e.DurationMs != nil {
			dur = " (" + formatMs(*e.DurationMs) + ")"
		}
		line := fmt.Sprintf("  %s %s%s%s", mark, e.ToolName, summary, dur)
		if e.IsError && e.Result != nil {
			line += ": " + firstLine(resultText(e.Result))
		}
		p.println(line)
	}
}

// close stops the live display and writes the summary.
func (p *progress) close() {
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = nil
	failed := ""
	if p.failed > 0 {
		failed = fmt.Sprintf(" (%d failed)", p.failed)
	}
	tokens := ""
	if p.hasUsage {
		u := p.usage
		tokens = fmt.Sprintf("; tokens: %d in, %d out, %d cache read, %d cache write", u.Input, u.Output, u.CacheRead, u.CacheWrite)
	}
	p.println(fmt.Sprintf("done: %s, %s%s in %s%s", plural(p.turns, "turn"), plural(p.calls, "tool call"), failed, formatMs(p.now().Sub(p.start).Milliseconds()), tokens))
	if p.final != "" {
		// The answer, whole, last: what a script piping the log wants.
		p.println("")
		for _, l := range strings.Split(p.final, "\n") {
			p.println(l)
		}
	}
}

func (p *progress) text(who, s string) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	const maxLines = 5
	for i, l := range lines {
		if i == maxLines {
			p.println(fmt.Sprintf("    … %d more lines", len(lines)-maxLines))
			break
		}
		prefix := "    "
		if i == 0 {
			prefix = "  " + who + ": "
		}
		p.println(prefix + l)
	}
}

// println writes a permanent line; on a terminal, above the live block.
// Its control characters are escaped: arguments, output and answers come
// from the sandbox and the model.
func (p *progress) println(s string) {
	s = escapeControls(s, false)
	if p.tty {
		p.clearLive()
		fmt.Fprintln(p.w, p.fit(s))
		p.drawLive()
		return
	}
	fmt.Fprintln(p.w, s)
}

func (p *progress) redraw() {
	p.clearLive()
	p.drawLive()
}

func (p *progress) clearLive() {
	if p.live > 0 {
		// Up to the block's first line, then clear to the end of the screen.
		fmt.Fprintf(p.w, "\r\x1b[%dA\x1b[J", p.live)
		p.live = 0
	}
}

func (p *progress) drawLive() {
	var b strings.Builder
	n := 0
	for _, rc := range p.running {
		el := p.now().Sub(rc.start)
		frame := spinner[int(el/tickInterval)%len(spinner)]
		fmt.Fprintf(&b, "%s\n", p.fit(escapeControls(fmt.Sprintf("  %s %s %s  %.1fs", frame, rc.name, rc.summary, el.Seconds()), false)))
		n++
		for _, t := range rc.tail {
			fmt.Fprintf(&b, "\x1b[2m%s\x1b[0m\n", p.fit("      │ "+escapeControls(t, false)))
			n++
		}
	}
	io.WriteString(p.w, b.String())
	p.live = n
}

// fit cuts a line to the terminal width so it never wraps (wrapping would
// break the live block's line count).
func (p *progress) fit(s string) string {
	s = strings.ReplaceAll(s, "\t", "    ")
	if utf8.RuneCountInString(s) < p.width {
		return s
	}
	r := []rune(s)
	return string(r[:p.width-2]) + "…"
}

func (p *progress) find(id string) *runningCall {
	for _, rc := range p.running {
		if rc.id == id {
			return rc
		}
	}
	return nil
}

func (p *progress) remove(rc *runningCall) {
	for i, x := range p.running {
		if x == rc {
			p.running = append(p.running[:i], p.running[i+1:]...)
			return
		}
	}
}

// summarizeArgs renders arguments on one short line: the command, path or
// pattern when there is one, else compact JSON.
func summarizeArgs(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"command", "pattern", "path"} {
			if s, ok := m[k].(string); ok && s != "" {
				out := shorten(firstLine(s), 60)
				if k == "pattern" {
					if p, ok := m["path"].(string); ok && p != "" {
						out += " in " + shorten(p, 30)
					}
				}
				return out
			}
		}
	}
	b, err := loop.MarshalNoEscape(json.RawMessage(raw))
	if err != nil {
		return ""
	}
	return shorten(string(b), 60)
}

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func lastLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var out []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

func resultText(r *loop.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func formatMs(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%dms", ms)
	}
	return fmt.Sprintf("%.1fs", float64(ms)/1000)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
