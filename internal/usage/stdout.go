package usage

import (
	"context"
	"io"

	"github.com/kubox-dev/kubox/internal/ndjson"
)

// JSONLines writes records as newline-delimited JSON to W (the controller's stdout): the
// stdout sink, and the body of each NDJSON object written to the bucket.
type JSONLines struct {
	W io.Writer
}

// Name names the sink in logs and metrics.
func (JSONLines) Name() string { return "stdout" }

// Write writes records, one JSON object per line, flushed at once.
func (s JSONLines) Write(_ context.Context, records []Record) error {
	return ndjson.Write(s.W, records, "usage record")
}

// Close does nothing; stdout is not the sink's to close.
func (JSONLines) Close(context.Context) error { return nil }
