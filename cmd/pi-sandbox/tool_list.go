package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// printToolList writes the tools, each with its summary and one line per
// argument (name, type, required), to w.
func printToolList(w io.Writer) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range tools.Specs() {
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Summary)
		ps, err := s.Params()
		if err != nil {
			fmt.Fprintf(tw, "\t(%v)\n", err)
			continue
		}
		for _, p := range ps {
			if p.Required {
				fmt.Fprintf(tw, "\t  %s\t%s\trequired\n", p.Name, p.Type)
			} else {
				fmt.Fprintf(tw, "\t  %s\t%s\n", p.Name, p.Type)
			}
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\n`pi-sandbox tool NAME --schema` prints a tool's JSON Schema; docs/tools.md describes the arguments.")
	return 0
}

// printSchema writes tool name's parameter schema, as the model gets it.
func printSchema(io stdio, name string) int {
	s, ok := tools.SpecByName(name)
	if !ok {
		fmt.Fprintf(io.err, "pi-sandbox tool: no tool %q; the tools are %s\n", name, specNames())
		return 2
	}
	fmt.Fprintf(io.out, "%s\n", s.Parameters)
	return 0
}

func specNames() string {
	var names []string
	for _, s := range tools.Specs() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// hasTool reports whether l has a tool called name.
func hasTool(l *loop.Loop, name string) bool {
	for _, t := range l.Tools() {
		if t.Name() == name {
			return true
		}
	}
	return false
}

// toolNames lists l's tools, comma-separated.
func toolNames(l *loop.Loop) string {
	var names []string
	for _, t := range l.Tools() {
		names = append(names, t.Name())
	}
	return strings.Join(names, ", ")
}

// textOutput is `tool --text`'s output: the result's text blocks, ending in
// a newline, with control characters but the newline and the tab escaped
// (the text comes from the target; the JSON carries it exactly).
func textOutput(r *loop.Result) []byte {
	s := escapeControls(r.Text(), true)
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return []byte(s)
}
