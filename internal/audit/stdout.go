package audit

import (
	"context"
	"io"

	"github.com/kubox-dev/kubox/internal/ndjson"
)

// JSONLines writes records as JSON lines to W (the router's stdout, for development): one
// object per line, each batch flushed at once.
type JSONLines struct {
	W io.Writer
}

// Name implements Sink.
func (JSONLines) Name() string { return "stdout" }

// Write implements Sink.
func (s JSONLines) Write(_ context.Context, records []Record) error {
	return ndjson.Write(s.W, records, "audit record")
}

// Close implements Sink.
func (JSONLines) Close(context.Context) error { return nil }
