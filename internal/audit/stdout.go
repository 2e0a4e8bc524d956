package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	bw := bufio.NewWriter(s.W)
	if err := encodeLines(bw, records); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing audit records: %w", err)
	}
	return nil
}

// Close implements Sink.
func (JSONLines) Close(context.Context) error { return nil }

// encodeLines writes records to w as newline-delimited JSON.
func encodeLines(w io.Writer, records []Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range records {
		if err := enc.Encode(&records[i]); err != nil {
			return fmt.Errorf("encoding an audit record: %w", err)
		}
	}
	return nil
}
