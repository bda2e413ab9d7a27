package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// Version is the protocol version. A client and a server of different
// versions do not talk: the hello fails and the client re-uploads.
const Version = 1

// Endpoints. Every request is a POST; bodies are JSON unless noted.
const (
	PathHello  = "/v1/hello"  // Hello → HelloReply
	PathRoots  = "/v1/roots"  // RootsRequest → RootsReply
	PathFS     = "/v1/fs"     // FSRequest → FSReply (stat, lstat, readdir, listdir, mkdir, realpath, access, remove, countlines)
	PathRead   = "/v1/read"   // FSRequest (header) → raw bytes; with Check, the FileInfo in HeaderInfo
	PathWrite  = "/v1/write"  // raw bytes, FSRequest in the header: an atomic WriteFile or a streaming OpenWriter
	PathEdit   = "/v1/edit"   // EditRequest → empty: compare and replace under a per-file lock
	PathSearch = "/v1/search" // SearchRequest → JSON lines of SearchLine, the last one Done
	PathRun    = "/v1/run"    // RunRequest → frames (see WriteFrame)
	PathPS     = "/v1/ps"     // empty → PSReply: the background processes
	PathKill   = "/v1/kill"   // KillRequest → empty: stop a run's tree; its reply still ends with an end frame
	PathEnd    = "/v1/end"    // EndRequest → empty: end the session's calls (and remove a directory), then reply
)

// Protocols is the one protocol both ends speak: HTTP/2 cleartext with
// prior knowledge.
func Protocols() *http.Protocols {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &p
}

// HeaderRequest carries the JSON request of endpoints whose body is raw
// bytes (read, write).
const HeaderRequest = "X-Pi-Request"

// HeaderInfo carries the FileInfo (JSON) of a checked read's file.
const HeaderInfo = "X-Pi-Info"

// StatusError is the HTTP status of a reply whose body is an *Error.
const StatusError = 422

// Hello opens a session: the client says which sandbox this is; the server
// replies with what it knows of the target.
type Hello struct {
	Version  int   `json:"version"`
	WorkDir  Str   `json:"workDir"`
	SpillDir Str   `json:"spillDir"`
	Shell    Str   `json:"shell,omitempty"` // empty: bash when present, else sh
	Env      []Str `json:"env,omitempty"`   // added to the helper's own environment
	// MaxBackground bounds the background process groups (0: the
	// helper's default).
	MaxBackground int `json:"maxBackground,omitempty"`
	// OOMCounter says the memory cgroup under /sys/fs/cgroup is the
	// target's own (a container or pod): an OOM kill its counter shows
	// during a command is the command's. Elsewhere (a host) it is not
	// read.
	OOMCounter bool `json:"oomCounter,omitempty"`
	// WantBuild asks for HelloReply.Build, which costs the helper a hash
	// of its binary (milliseconds in a container); without it Build may
	// be empty.
	WantBuild bool `json:"wantBuild,omitempty"`
}

// HelloReply describes the target and the helper.
type HelloReply struct {
	Version      int      `json:"version"`
	Build        string   `json:"build"` // hex SHA-256 of the helper binary (see Hello.WantBuild)
	PID          int      `json:"pid"`
	UID          int      `json:"uid"`
	GID          int      `json:"gid"`
	User         string   `json:"user"`
	Home         string   `json:"home"`
	OS           string   `json:"os"`
	Arch         string   `json:"arch"`
	Shell        string   `json:"shell"`
	Capabilities []string `json:"capabilities"`
	Limits       []string `json:"limits,omitempty"`
}

// RootsRequest registers a set of confinement roots.
type RootsRequest struct {
	Roots []ops.Root `json:"roots"`
}

// RootsReply names the registered set; requests refer to it by ID (0 is
// "unconfined"). Roots are the resolved real paths.
type RootsReply struct {
	ID    int        `json:"id"`
	Roots []ops.Root `json:"roots"`
}

// FSRequest is one file operation.
type FSRequest struct {
	Op    string `json:"op"`
	Path  Str    `json:"path"`
	Roots int    `json:"roots,omitempty"`
	Flag  int    `json:"flag,omitempty"` // OpenWriter's flags
	Perm  uint32 `json:"perm,omitempty"`
	Mode  uint32 `json:"mode,omitempty"` // Access's mode
	// Stream marks a write as OpenWriter (the body is appended as it comes)
	// rather than an atomic WriteFile.
	Stream bool `json:"stream,omitempty"`
	// Size is the length of an atomic write's body, so a cut body is never
	// renamed into place.
	Size int64 `json:"size,omitempty"`
	// Parents makes an atomic write ops.WriteParentsFS's WriteFileParents.
	Parents bool `json:"parents,omitempty"`
	// Check makes a read ops.CheckedOpenFS's OpenChecked: Access with Mode,
	// Stat, and the open only for a regular file (anything else: status 204
	// and no body); the Stat's FileInfo is in HeaderInfo.
	Check bool `json:"check,omitempty"`
}

// WriteStatus ends the reply of a streaming write.
type WriteStatus struct {
	Err *Error `json:"err,omitempty"`
}

// FSReply is the answer to an FSRequest.
type FSReply struct {
	Info     *FileInfo  `json:"info,omitempty"`
	Entries  []FileInfo `json:"entries,omitempty"`
	Path     Str        `json:"path,omitempty"`
	Newlines int64      `json:"newlines,omitempty"`
	Size     int64      `json:"size,omitempty"`
	// Targets (listdir): for each entry that is a symbolic link, what it
	// leads to.
	Targets []LinkTarget `json:"targets,omitempty"`
}

// LinkTarget is what the symbolic link Entries[Index] leads to: Mode, or
// Failed when its stat failed.
type LinkTarget struct {
	Index  int         `json:"i"`
	Mode   fs.FileMode `json:"mode,omitempty"`
	Failed bool        `json:"failed,omitempty"`
}

// FileInfo is an fs.FileInfo on the wire.
type FileInfo struct {
	Name    Str         `json:"name"`
	Size    int64       `json:"size"`
	Mode    fs.FileMode `json:"mode"`
	ModTime int64       `json:"mtime"` // Unix nanoseconds
}

// ToFileInfo converts fi.
func ToFileInfo(fi fs.FileInfo) FileInfo {
	return FileInfo{Name: Str(fi.Name()), Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime().UnixNano()}
}

// FileInfo returns f as an fs.FileInfo that is also an fs.DirEntry.
func (f FileInfo) FileInfo() fs.FileInfo { return fileInfo{f} }

type fileInfo struct{ f FileInfo }

func (i fileInfo) Name() string               { return string(i.f.Name) }
func (i fileInfo) Size() int64                { return i.f.Size }
func (i fileInfo) Mode() fs.FileMode          { return i.f.Mode }
func (i fileInfo) ModTime() time.Time         { return time.Unix(0, i.f.ModTime) }
func (i fileInfo) IsDir() bool                { return i.f.Mode.IsDir() }
func (i fileInfo) Sys() any                   { return nil }
func (i fileInfo) Type() fs.FileMode          { return i.f.Mode.Type() }
func (i fileInfo) Info() (fs.FileInfo, error) { return i, nil }
func (i fileInfo) String() string             { return fs.FormatFileInfo(i) }

// EditRequest replaces a file's content if it is still what the client
// read: Expect is the hex SHA-256 of that content. The compare and the
// atomic write happen under a per-file lock in the target, so two sessions
// editing one file never lose an update silently.
type EditRequest struct {
	Path   Str    `json:"path"`
	Roots  int    `json:"roots,omitempty"`
	Expect string `json:"expect"`
	New    []byte `json:"new"`
}

// SearchRequest is a grep or a find: an ops.GrepQuery or ops.FindQuery
// with byte-exact strings.
type SearchRequest struct {
	Roots      int  `json:"roots,omitempty"`
	Find       bool `json:"find,omitempty"`
	Pattern    Str  `json:"pattern"`
	Path       Str  `json:"path"`
	Glob       Str  `json:"glob,omitempty"`
	IgnoreCase bool `json:"ignoreCase,omitempty"`
	Literal    bool `json:"literal,omitempty"`
	Context    int  `json:"context,omitempty"`
	Max        int  `json:"max,omitempty"`
	MaxText    int  `json:"maxText,omitempty"`
}

// GrepRequest encodes q.
func GrepRequest(q *ops.GrepQuery) *SearchRequest {
	return &SearchRequest{Pattern: Str(q.Pattern), Path: Str(q.Path), Glob: Str(q.Glob), IgnoreCase: q.IgnoreCase, Literal: q.Literal, Context: q.Context, Max: q.MaxMatches, MaxText: q.MaxText}
}

// FindRequest encodes q.
func FindRequest(q *ops.FindQuery) *SearchRequest {
	return &SearchRequest{Find: true, Pattern: Str(q.Pattern), Path: Str(q.Path), Max: q.MaxResults}
}

// GrepQuery decodes r.
func (r *SearchRequest) GrepQuery() *ops.GrepQuery {
	return &ops.GrepQuery{Pattern: string(r.Pattern), Path: string(r.Path), Glob: string(r.Glob), IgnoreCase: r.IgnoreCase, Literal: r.Literal, Context: r.Context, MaxMatches: r.Max, MaxText: r.MaxText}
}

// FindQuery decodes r.
func (r *SearchRequest) FindQuery() *ops.FindQuery {
	return &ops.FindQuery{Pattern: string(r.Pattern), Path: string(r.Path), MaxResults: r.Max}
}

// SearchLine is one line of a grep or find reply: a match or context line
// (grep), a result (find, Rel), or the final status (Done).
type SearchLine struct {
	Path  Str    `json:"p,omitempty"`
	Line  int    `json:"l,omitempty"`
	Match bool   `json:"m,omitempty"`
	Text  []byte `json:"t,omitempty"`
	Cut   bool   `json:"c,omitempty"` // Text was cut at the query's MaxText
	Rel   Str    `json:"r,omitempty"`
	Done  bool   `json:"done,omitempty"`
	Err   *Error `json:"err,omitempty"`
}

// RunRequest runs one command.
type RunRequest struct {
	// ID names the run for a KillRequest.
	ID      string `json:"id,omitempty"`
	Command Str    `json:"command"`
	Dir     Str    `json:"dir,omitempty"`
	Env     []Str  `json:"env,omitempty"`
	Timeout int64  `json:"timeoutNs,omitempty"`
	Roots   int    `json:"roots,omitempty"`
	// Base, when set, replaces the helper's base environment (an empty
	// list: an empty base), as ops.Cmd.BaseEnv.
	Base *[]Str `json:"base,omitempty"`
	// Spill, when set, has the helper save the output in a file in the
	// target as well (ops.SpillRunner); RunEnd.Spill says how it went.
	Spill *SpillRequest `json:"spill,omitempty"`
}

// SpillRequest is an ops.Spill on the wire.
type SpillRequest struct {
	Path       Str    `json:"path"`
	AfterBytes int64  `json:"afterBytes"`
	AfterLines int64  `json:"afterLines"`
	Cap        int64  `json:"cap"`
	CapNote    string `json:"capNote,omitempty"`
	Total      int64  `json:"total,omitempty"` // ops.Spill.Total
	// Skip: past SkipAfter bytes sent, hold the last SkipHold bytes back
	// and send the rest as a FrameSkip (ops.Spill).
	Skip      bool  `json:"skip,omitempty"`
	SkipAfter int64 `json:"skipAfter,omitempty"`
	SkipHold  int64 `json:"skipHold,omitempty"`
}

// Skip is the payload of a FrameSkip: ops.SkippedOutput.
type Skip struct {
	Raw      int64 `json:"raw"`
	Decoded  int64 `json:"decoded"`
	Newlines int64 `json:"newlines"`
	LastLine int64 `json:"lastLine"`
}

// SpillEnd is the outcome of a SpillRequest.
type SpillEnd struct {
	Created bool   `json:"created,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
	Err     *Error `json:"err,omitempty"`
}

// PSReply lists the background processes.
type PSReply struct {
	Processes []Process `json:"processes"`
}

// Process is an ops.Process with byte-exact strings.
type Process struct {
	PID     int    `json:"pid"`
	Started int64  `json:"started"` // Unix nanoseconds
	State   string `json:"state"`
	Command Str    `json:"command"`
	Group   int    `json:"group"`
	Log     Str    `json:"log"`
}

// KillRequest stops a run as a cancel would, while its reply stream stays
// open, so the client learns when the tree is dead.
type KillRequest struct {
	ID string `json:"id"`
}

// EndRequest ends a session before its stream closes: every call in flight
// is cancelled (each command's tree killed) and waited for, then Remove,
// when set, is removed with everything in it. The reply comes after, so a
// client that closes the stream then knows both are done.
type EndRequest struct {
	Remove Str `json:"remove,omitempty"`
}

// Frame kinds of a run reply. A frame is kind(1) | len(u32 BE) | payload.
// Unknown kinds are skipped.
const (
	FrameOutput byte = 'o' // output bytes, verbatim
	FrameEnd    byte = 'e' // RunEnd JSON; the last frame
	FrameSkip   byte = 's' // Skip JSON: output saved in the target only
)

// MaxFrame bounds a frame's payload.
const MaxFrame = 1 << 20

// FrameSizeError reports a frame whose length is over MaxFrame: ReadFrame
// reads none of it.
type FrameSizeError struct {
	Size uint32
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("proto: a frame of %d bytes exceeds the 1 MiB bound", e.Size)
}

// RunEnd is the outcome of a command.
type RunEnd struct {
	// Kind is "exit" (Code, Signal, OOM), "timeout", "canceled", "start"
	// (Err) or "unknown" (Message).
	Kind   string `json:"kind"`
	Code   int    `json:"code,omitempty"`
	Signal int    `json:"signal,omitempty"`
	OOM    bool   `json:"oom,omitempty"`
	// Timeout details.
	ShellExited   bool   `json:"shellExited,omitempty"`
	ShellExitCode int    `json:"shellExitCode,omitempty"`
	ShellRuntime  int64  `json:"shellRuntimeNs,omitempty"`
	Err           *Error `json:"err,omitempty"`
	Message       string `json:"message,omitempty"`
	// Spill is the outcome of the request's Spill.
	Spill *SpillEnd `json:"spill,omitempty"`
}

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, kind byte, payload []byte) error {
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// AppendFrame appends one frame to b (one write for header and payload).
func AppendFrame(b []byte, kind byte, payload []byte) []byte {
	b = append(b, kind, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], uint32(len(payload)))
	return append(b, payload...)
}

// ReadFrame reads one frame into buf (grown as needed) and returns its kind
// and payload.
func ReadFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrame {
		return 0, nil, &FrameSizeError{Size: n}
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], buf, nil
}
