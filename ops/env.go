package ops

// NonInteractiveEnv returns the "KEY=VALUE" entries that keep a command from
// waiting for a terminal: pagers print, git neither prompts nor
// opens an editor, apt asks nothing. The bash tool sets them on every
// backend; the docker and ssh backends also start every command with them.
// The slice is new on each call.
func NonInteractiveEnv() []string {
	return []string{
		"PAGER=cat",
		"GIT_PAGER=cat",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_EDITOR=true",
		"DEBIAN_FRONTEND=noninteractive",
	}
}
