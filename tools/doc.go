// Package tools implements pi's seven coding tools — read, bash, edit, write,
// grep, find, ls — at pi 1.6 parity, on top of the ops interfaces only. It
// never imports os/exec, os file APIs, Docker or SSH (deps_test.go enforces
// it): every file and process goes through the backend, so the tools behave
// the same on every target.
package tools
