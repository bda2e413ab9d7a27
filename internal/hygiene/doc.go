// Package hygiene holds repository checks that are not about any one
// package: what may be committed.
package hygiene
