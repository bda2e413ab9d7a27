package provider

import "strings"

// Redact returns err with every occurrence of the secrets in its text
// replaced by "***", so an API key a server echoes back (or one inside a
// URL) never reaches a log. Secrets shorter than 4 bytes are ignored.
// errors.Is and errors.As still see the original error.
func Redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := msg
	for _, s := range secrets {
		if len(s) >= 4 {
			red = strings.ReplaceAll(red, s, "***")
		}
	}
	if red == msg {
		return err
	}
	return &redacted{msg: red, err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
