package main

import (
	"encoding/json"
	"regexp"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// oneShotSpillNote is what a truncated bash result says instead of a path
// when the container it was written in is removed as the call ends.
const oneShotSpillNote = "not kept (--image: this call's container, and the full output in it, is removed when the call ends; use --container or `pi-sandbox up` to keep full outputs)"

var fullOutputRe = regexp.MustCompile(`Full output: [^\]\s]+\]`)

// dropDeadSpillPath rewrites res for a one-shot call whose sandbox is an
// ephemeral container (--image): the printed fullOutputPath would name a
// file that is gone once the call returns.
func dropDeadSpillPath(cfg open.Config, res *loop.Result) {
	if res == nil || cfg.Backend != "docker" || cfg.Docker.Image == "" {
		return
	}
	changed := false
	for i, c := range res.Content {
		if c.Type == "text" && fullOutputRe.MatchString(c.Text) {
			res.Content[i].Text = fullOutputRe.ReplaceAllLiteralString(c.Text, "Full output: "+oneShotSpillNote+"]")
			changed = true
		}
	}
	if !changed || res.Details == nil {
		return
	}
	raw, err := json.Marshal(res.Details)
	if err != nil {
		return
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		delete(m, "fullOutputPath")
		res.Details = m
	}
}
