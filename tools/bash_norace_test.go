//go:build !race

package tools

const raceEnabled = false
