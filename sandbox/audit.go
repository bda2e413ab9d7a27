package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// AuditEntry is one line of the audit log. A call that runs gets two lines:
// "started" before it executes (so a crash during the call still leaves a
// trace) and its outcome after; a blocked call gets one.
type AuditEntry struct {
	Time   time.Time `json:"time"`
	CallID string    `json:"callId"`
	Tool   string    `json:"tool"`
	// Arguments are the call's arguments as the model sent them, with
	// secrets redacted.
	Arguments json.RawMessage `json:"arguments"`
	// Outcome is "started", "ok", "error" or "blocked".
	Outcome string `json:"outcome"`
	IsError bool   `json:"isError"`
	// DurationMs is the execution time; absent for "started" and "blocked".
	DurationMs *int64 `json:"durationMs,omitempty"`
	// Message is the start of an error or blocked result's text.
	Message string `json:"message,omitempty"`
}

// Audit outcomes.
const (
	OutcomeStarted = "started"
	OutcomeOK      = "ok"
	OutcomeError   = "error"
	OutcomeBlocked = "blocked"
)

const auditMessageMax = 500

// auditLog appends entries to a file opened with O_APPEND, one write per
// line, so nothing is buffered in the process and concurrent writers (other
// pi-sandbox processes) do not interleave within a line.
type auditLog struct {
	mu     sync.Mutex
	f      *os.File
	redact *redactor
	err    error // the first write error, reported by close
	now    func() time.Time
}

func openAudit(name string, r *redactor) (*auditLog, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox: audit log: %w", err)
	}
	return &auditLog{f: f, redact: r, now: time.Now}, nil
}

func (a *auditLog) write(call *loop.Call, outcome string, res *loop.Result, dur *int64) {
	args := call.RawArgs
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	e := AuditEntry{
		Time:       a.now().UTC(),
		CallID:     call.ID,
		Tool:       call.Name,
		Arguments:  a.redact.raw(args),
		Outcome:    outcome,
		DurationMs: dur,
	}
	if res != nil {
		e.IsError = res.IsError
		if res.IsError && len(res.Content) > 0 {
			m, _ := a.redact.text(res.Content[0].Text)
			if len(m) > auditMessageMax {
				m = strings.ToValidUTF8(m[:auditMessageMax], "") + "…"
			}
			e.Message = m
		}
	}
	line, err := loop.MarshalNoEscape(e)
	if err != nil {
		line, _ = loop.MarshalNoEscape(AuditEntry{Time: e.Time, CallID: e.CallID, Tool: e.Tool, Arguments: json.RawMessage(`{}`), Outcome: outcome, Message: "unencodable arguments"})
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(line); err != nil && a.err == nil {
		a.err = fmt.Errorf("sandbox: audit log: %w", err)
	}
}

func (a *auditLog) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return errors.Join(a.err, a.f.Close())
}

// before records blocked calls: it wraps the policy's before hooks, so a
// result coming back from next is a block.
func (a *auditLog) before() loop.BeforeMiddleware {
	return func(next loop.BeforeHandler) loop.BeforeHandler {
		return func(ctx context.Context, call *loop.Call) *loop.Result {
			res := next(ctx, call)
			if res != nil {
				a.write(call, OutcomeBlocked, res, nil)
			}
			return res
		}
	}
}

// exec records the start and the outcome of executed calls; it is the
// outermost exec middleware, so it sees the redacted result.
func (a *auditLog) exec() loop.ExecMiddleware {
	return func(next loop.ExecHandler) loop.ExecHandler {
		return func(ctx context.Context, call *loop.Call, update loop.UpdateFunc) *loop.Result {
			a.write(call, OutcomeStarted, nil, nil)
			start := time.Now()
			res := next(ctx, call, update)
			ms := time.Since(start).Milliseconds()
			outcome := OutcomeOK
			if res == nil || res.IsError {
				outcome = OutcomeError
			}
			a.write(call, outcome, res, &ms)
			return res
		}
	}
}
