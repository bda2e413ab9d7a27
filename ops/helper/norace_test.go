//go:build !race

package helper_test

const shimEnvExtra = ""
