//go:build !race

package local

var shimEnvExtra []string
