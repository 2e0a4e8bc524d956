// Package audit is kubox's audit trail: the Record of one request kubox-router let through to a
// sandbox, and the Queue that carries records to durable sinks (an S3-compatible bucket, OTLP
// logs, JSON lines on stdout) in batches, off the request path: Add never blocks, and a full
// queue drops the record and counts it. See docs/audit.md.
//
// The router writes records at its edge (internal/router/audit), from what it saw of the
// request and of its answer: nothing in a record comes from the sandbox's own account of it.
package audit
