// Package loop is the tool-call pipeline and the agent loop of pi 1.6:
// argument preparation, JSON-Schema validation with pi's coercions and texts,
// before/after hooks as middleware, parallel and sequential batches, events,
// and results in source order. It knows tools only through [Tool] and knows
// nothing of backends.
//
// # Pipeline
//
// Every call goes through the steps of pi 1.6's tool call: abort check,
// lookup ("Tool <name> not found"), [ArgumentPreparer], coercion and
// validation ("Validation failed for tool …" with the raw arguments quoted in
// the model's key order), the before chain, execution, the after chain. Every
// failure becomes an error result; [Result.Err] keeps the Go error so callers
// can tell a transport failure from a tool failure.
//
// # Hooks
//
// Hooks are middleware built once, in [New]: [BeforeMiddleware] wraps the
// decision whether a prepared call runs (return a result to block it) and
// [ExecMiddleware] wraps execution (act on the result afterwards).
// [WithBeforeToolCall] and [WithAfterToolCall] adapt pi's beforeToolCall
// (block with a reason, optionally terminating; mutate arguments) and
// afterToolCall (field-by-field [Override]) to them. The sandbox layer plugs
// its command policy, redaction and audit log in here.
//
// # Batches and events
//
// [Loop.RunBatch] runs one assistant message's calls: in parallel unless a
// called tool is [Sequential] or [WithSequential] was given. Events
// ([ToolExecutionStart], [ToolExecutionUpdate], [ToolExecutionEnd],
// [MessageStart], [MessageEnd]) marshal to pi's JSON; end events come in
// completion order, tool-result messages in source order. [Loop.RejectBatch]
// answers a message that hit the output token limit.
//
// # Agent loop
//
// [Loop.Run] is pi's agent loop over a [Provider]: turns, steering and
// follow-up [Queue]s, and the full event sequence from [AgentStart] to
// [AgentEnd]. [Script] is a provider that replays assistant turns from JSON
// lines; the real models' providers live in loop/provider/... (this package
// imports no vendor SDK). Assistant messages carry the provider's [Usage].
package loop
