package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFrame is the longest line serve reads as one JSON-RPC message (the
// SDK's own limit): a longer one is answered with an error and skipped.
const maxFrame = mcp.DefaultMaxLineLength

// JSON-RPC 2.0 error codes for what arrives broken.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// stdioTransport is serve's MCP transport: newline-delimited JSON-RPC on
// stdin and stdout, like the SDK's IOTransport, except that a line that is
// not a well-formed message (not JSON, not an object, no method, an id that
// is neither a string nor a number, longer than maxFrame) gets a JSON-RPC
// error response and the session goes on, with the calls in flight. The
// SDK's transport ends the session on the first such line.
//
// Lines that are well-formed messages go, unchanged, to an IOTransport
// through a pipe; error responses and the SDK's messages share one writer,
// a line at a time. A batch with a broken element gets one error for the
// whole batch. The SDK cannot tell this wrapped connection the negotiated
// protocol version (that hook is unexported), so it accepts batches under
// every version, where it refused them (ending the session) from
// 2025-06-18 on.
type stdioTransport struct {
	in  io.ReadCloser
	out io.Writer
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	w := &lineWriter{w: t.out}
	inner, err := (&mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{w}, MaxLineLength: -1}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &stdioConn{Connection: inner, in: t.in, w: w, pending: map[jsonrpc.ID]bool{}, answered: make(chan struct{}, 1)}
	go c.pump(pw)
	return c, nil
}

// lineWriter writes whole lines, one writer at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type stdioConn struct {
	mcp.Connection
	in io.ReadCloser
	w  *lineWriter

	mu      sync.Mutex
	readErr error // why stdin ended, other than EOF
	// pending holds the ids of the requests read and not yet answered.
	pending map[jsonrpc.ID]bool
	// ended is set when a write failed or the connection closed: no answer
	// still to come can reach the client.
	ended bool
	// answered wakes a Read waiting at the end of stdin (a level: one
	// token stands for any number of changes).
	answered chan struct{}
}

// pump reads stdin line by line, answers broken lines and passes the rest
// to the SDK's connection.
func (c *stdioConn) pump(pw *io.PipeWriter) {
	br := bufio.NewReaderSize(c.in, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		tooLong := false
		switch {
		case len(line)+len(chunk) > maxFrame+1:
			// Skip to the end of the line without holding it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			tooLong, line = true, line[:0]
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, chunk...)
			continue
		default:
			line = append(line, chunk...)
		}
		if tooLong {
			c.reject(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: message longer than %d MiB", maxFrame>>20))
		} else if msg := bytes.TrimSpace(line); len(msg) > 0 {
			if bad := checkFrame(msg); bad != nil {
				c.writeError(bad)
			} else if _, werr := pw.Write(append(msg, '\n')); werr != nil {
				return // the connection is closed
			}
		}
		line = line[:0]
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.mu.Lock()
				c.readErr = err
				c.mu.Unlock()
			}
			pw.Close()
			return
		}
	}
}

// Read is the SDK connection's Read; a batch it refuses is answered with an
// error instead of ending the session.
//
// At the end of stdin Read returns only once every request read before it
// has been answered (or no answer can be written any more): the SDK treats
// the end of reading as the end of the session, cancelling the calls in
// flight and refusing to write their answers, while a client that writes
// its requests and closes stdin still waits for them. The calls' own
// timeouts, and a signal, bound the wait.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
				c.mu.Lock()
				c.pending[req.ID] = true
				c.mu.Unlock()
			}
			return msg, nil
		}
		if errors.Is(err, io.EOF) {
			if werr := c.drain(ctx); werr != nil {
				return nil, werr
			}
			c.mu.Lock()
			if c.readErr != nil {
				err = c.readErr
			}
			c.mu.Unlock()
			return nil, err
		}
		// The SDK refuses a batch repeating the id of one in flight as an
		// invalid request; any other error ends the session, as before.
		var we *jsonrpc.Error
		if ctx.Err() != nil || !errors.As(err, &we) || we.Code != codeInvalidRequest {
			return nil, err
		}
		c.reject(nil, codeInvalidRequest, "Invalid Request: "+err.Error())
	}
}

// drain waits until every request read has been answered, the connection
// can write no more, or ctx ends.
func (c *stdioConn) drain(ctx context.Context) error {
	for {
		c.mu.Lock()
		done := len(c.pending) == 0 || c.ended
		c.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-c.answered:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Write is the SDK connection's Write; it notes which requests are
// answered.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	resp, ok := msg.(*jsonrpc.Response)
	if err == nil && !ok {
		return nil
	}
	c.mu.Lock()
	if err != nil {
		c.ended = true
	} else {
		delete(c.pending, resp.ID)
	}
	c.mu.Unlock()
	c.wake()
	return err
}

func (c *stdioConn) wake() {
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

func (c *stdioConn) Close() error {
	err := c.Connection.Close()
	c.in.Close()
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.wake()
	return err
}

// frameError is the error response to one broken line.
type frameError struct {
	ID    json.RawMessage `json:"id"`
	Code  int64           `json:"code"`
	Error string          `json:"message"`
}

func (c *stdioConn) reject(id json.RawMessage, code int64, msg string) {
	c.writeError(&frameError{ID: id, Code: code, Error: msg})
}

func (c *stdioConn) writeError(e *frameError) {
	id := e.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": e.Code, "message": e.Error},
	})
	// A failed write means stdout is gone; the SDK's next write ends the
	// session.
	_, _ = c.w.Write(append(b, '\n'))
}

// checkFrame returns the error response to line, or nil when line is a
// well-formed JSON-RPC message (or a batch of them) for the SDK.
func checkFrame(line []byte) *frameError {
	if !json.Valid(line) {
		return &frameError{Code: codeParseError, Error: "Parse error: the line is not valid JSON"}
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
			return &frameError{Code: codeInvalidRequest, Error: "Invalid Request: an empty batch"}
		}
		ids := map[string]bool{}
		for i, m := range batch {
			bad := checkMessage(bytes.TrimSpace(m))
			if bad == nil {
				var w struct {
					ID     json.RawMessage `json:"id"`
					Method json.RawMessage `json:"method"`
				}
				json.Unmarshal(m, &w)
				if w.Method != nil && w.ID != nil && string(w.ID) != "null" {
					if ids[string(w.ID)] {
						bad = &frameError{Code: codeInvalidRequest, Error: "Invalid Request: a repeated id " + string(w.ID)}
					}
					ids[string(w.ID)] = true
				}
			}
			if bad != nil {
				bad.ID = nil
				bad.Error = fmt.Sprintf("%s (batch element %d)", bad.Error, i)
				return bad
			}
		}
		return nil
	}
	return checkMessage(line)
}

// checkMessage checks one message of valid JSON: an object with "jsonrpc":
// "2.0", an id that is a string, a number or absent, and a method (a
// request or notification) or a result or error (a response).
func checkMessage(m []byte) *frameError {
	invalid := func(id json.RawMessage, why string) *frameError {
		return &frameError{ID: id, Code: codeInvalidRequest, Error: "Invalid Request: " + why}
	}
	if len(m) == 0 || m[0] != '{' {
		return invalid(nil, "a message is a JSON object")
	}
	var w struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(m, &w); err != nil {
		return invalid(nil, err.Error())
	}
	var id json.RawMessage
	if len(w.ID) > 0 && string(w.ID) != "null" {
		if c := w.ID[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
			return invalid(nil, "the id must be a string or a number")
		}
		id = w.ID
	}
	if string(w.JSONRPC) != `"2.0"` {
		return invalid(id, `"jsonrpc" must be "2.0"`)
	}
	if w.Method == nil {
		if w.Result == nil && w.Error == nil {
			return invalid(id, "no method")
		}
		if id == nil {
			return invalid(nil, "a response needs an id")
		}
	} else if w.Method[0] != '"' {
		return invalid(id, "the method must be a string")
	}
	if _, err := jsonrpc.DecodeMessage(m); err != nil {
		return invalid(id, err.Error())
	}
	return nil
}
