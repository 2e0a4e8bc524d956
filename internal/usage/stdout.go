package usage

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	bw := bufio.NewWriter(s.W)
	if err := EncodeLines(bw, records); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing usage records: %w", err)
	}
	return nil
}

// Close does nothing; stdout is not the sink's to close.
func (JSONLines) Close(context.Context) error { return nil }

// EncodeLines writes records to w as newline-delimited JSON.
func EncodeLines(w io.Writer, records []Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range records {
		if err := enc.Encode(&records[i]); err != nil {
			return fmt.Errorf("encoding the usage record of sandbox %s/%s: %w", records[i].Namespace, records[i].Name, err)
		}
	}
	return nil
}
