package helper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// Grep searches in the target with the ops/search engine.
func (cl *Client) Grep(ctx context.Context, q *ops.GrepQuery, fn func(ops.GrepEvent) error) error {
	return cl.search(ctx, proto.GrepRequest(q), func(l *proto.SearchLine) error {
		return fn(ops.GrepEvent{Path: string(l.Path), Line: l.Line, Match: l.Match, Text: l.Text, Truncated: l.Cut})
	})
}

// Find finds files in the target with the ops/search engine.
func (cl *Client) Find(ctx context.Context, q *ops.FindQuery, fn func(string) error) error {
	return cl.search(ctx, proto.FindRequest(q), func(l *proto.SearchLine) error {
		return fn(string(l.Rel))
	})
}

func (cl *Client) search(ctx context.Context, req *proto.SearchRequest, each func(*proto.SearchLine) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // an early stop resets the stream: the search ends in the target
	resp, release, err := cl.call(ctx, proto.PathSearch, req, false, nil)
	if err != nil {
		return err
	}
	defer release()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxSearchLine)
	for sc.Scan() {
		var l proto.SearchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return cl.c.errorf("helper: bad search line: %w", err)
		}
		if l.Done {
			return l.Err.Err(cl.roots())
		}
		if err := each(&l); err != nil {
			return err
		}
	}
	err = sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		err = &LimitError{What: "search reply line", Limit: "4 MiB"}
	}
	if err == nil {
		err = errors.New("reply ended without a status")
	}
	return cl.bodyErr(ctx, err)
}
