// Package ndjson writes records as newline-delimited JSON: one object per line, HTML left
// unescaped. It is the form kubox's durable records (the audit trail, usage) take on stdout and
// in object storage.
package ndjson

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Encode writes records to w, one JSON object per line; what names a record in errors ("audit
// record").
func Encode[T any](w io.Writer, records []T, what string) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range records {
		if err := enc.Encode(&records[i]); err != nil {
			return fmt.Errorf("encoding %s %d of %d: %w", what, i+1, len(records), err)
		}
	}
	return nil
}

// Write is Encode through a buffer flushed at the end: each call's lines reach w together.
func Write[T any](w io.Writer, records []T, what string) error {
	bw := bufio.NewWriter(w)
	if err := Encode(bw, records, what); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %ss: %w", what, err)
	}
	return nil
}
