package ops

import "context"

// Spill asks a SpillRunner to save a command's whole output in a file in
// the target, and says how that went.
type Spill struct {
	// Path is the file, created exclusively with mode 0600 (its directory
	// too when missing).
	Path string
	// The file is created once the output passed AfterBytes bytes, or
	// AfterLines lines (the last one counted when it has no "\n" yet), and
	// then holds the output from its first byte.
	AfterBytes int64
	AfterLines int64
	// Cap bounds the output saved; CapNote ends a capped file.
	Cap     int64
	CapNote string
	// Total bounds, with package savedout, the bytes of all saved outputs
	// under the file's spill root (0: none); a file it cuts ends with
	// savedout's note and Err wraps savedout.ErrTotal.
	Total int64
	// Skip, for a Cmd.Output that is an OutputSkipper, lets the runner
	// keep output from it once SkipAfter bytes were written: then only the
	// last SkipHold bytes (and the counts of the rest) reach it, at the
	// end. The file still gets everything.
	Skip      bool
	SkipAfter int64
	SkipHold  int64

	// Set when RunSpill returns.
	Created bool  // the file exists
	Bytes   int64 // output bytes it holds
	Err     error // the first failure to create or write it; it was not written on from there
}

// SpillRunner is implemented by runners that save a command's output in
// the target as it runs (the helper), so that the bytes are not sent back
// to be saved there.
type SpillRunner interface {
	Runner
	// RunSpill is Run that also saves the output as s says. It returns an
	// error wrapping ErrUnsupported, having run nothing, when it cannot
	// for this call (the caller then runs the command with Run). A failing
	// file never fails or blocks the command: saving stops, s.Err says
	// why.
	RunSpill(ctx context.Context, cmd *Cmd, s *Spill) error
}

// OutputSkipper is implemented by a Cmd.Output that can be told about
// output it was not given: a SpillRunner asked to (Spill.Skip) saves the
// middle of a long output in the target only, and sends its counts.
type OutputSkipper interface {
	SkipOutput(s SkippedOutput)
}

// SkippedOutput counts output that was not written to Cmd.Output. Decoded
// counts its bytes once decoded as UTF-8 the way Node does (each maximal
// invalid subpart one U+FFFD); the skipped bytes end where a decoder is
// between characters, and a decoder of what came before was mid-character
// only if the skipped bytes complete that character (it starts afresh).
type SkippedOutput struct {
	Raw      int64
	Decoded  int64
	Newlines int64
	// LastLine is the decoded size after the last "\n" (all of Decoded
	// when Newlines is 0).
	LastLine int64
}
