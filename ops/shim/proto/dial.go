package proto

// PathDial opens a TCP connection in the target: the DialRequest travels
// in HeaderRequest, the request body is what the client sends and the
// reply body (status 200, sent once the connection is made) what the
// target sends back. The end of the request body half-closes the
// connection; the end of the reply body is the target's end of it. A dial
// that fails is a StatusError reply with the reason.
const PathDial = "/v1/dial"

// DialRequest names the port dialled on the target's 127.0.0.1.
type DialRequest struct {
	Port int `json:"port"`
}
