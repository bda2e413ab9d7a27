package proto

// PathEgress opens a listener on the target's 127.0.0.1 (an ephemeral
// port) whose connections travel to the client: the reply (status 200) is
// JSON lines of EgressEvent, the first one naming the port, each next one
// a connection accepted there, which the client claims with
// PathEgressConn. The listener, and every connection not yet claimed,
// closes when the request ends (the client cancels it, or the session
// ends). A listen that fails is a StatusError reply with the reason.
const PathEgress = "/v1/egress"

// PathEgressConn claims an accepted connection: the EgressConnRequest
// travels in HeaderRequest, and the bytes both ways as for PathDial (the
// request body to the target's process, the reply body from it).
const PathEgressConn = "/v1/egress/conn"

// EgressEvent is one line of a PathEgress reply: the first has Listener
// and Port, each next one Conn.
type EgressEvent struct {
	Listener int64  `json:"listener,omitempty"`
	Port     int    `json:"port,omitempty"`
	Conn     uint64 `json:"conn,omitempty"`
}

// EgressConnRequest names an accepted connection of a listener.
type EgressConnRequest struct {
	Listener int64  `json:"listener"`
	Conn     uint64 `json:"conn"`
}

// EgressMaxPending bounds a listener's accepted connections not yet
// claimed; one more is closed at once. EgressClaimTimeout (in the
// helper) closes a connection left unclaimed.
const EgressMaxPending = 256

// MaxEgressEvent bounds one line of a PathEgress reply, for the client.
const MaxEgressEvent = 256
