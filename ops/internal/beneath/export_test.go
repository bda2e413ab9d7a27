//go:build linux

package beneath

// NoOpenat2 turns the openat2 shortcut off, so tests can run both ways.
var NoOpenat2 = &noOpenat2
