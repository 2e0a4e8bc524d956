package ndjson

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type rec struct {
	A string `json:"a"`
}

// TestWrite: one object per line, HTML not escaped.
func TestWrite(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, []rec{{A: "<b>"}, {A: "x"}}, "record"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("{\"a\":\"<b>\"}\n{\"a\":\"x\"}\n", buf.String()); diff != "" {
		t.Error(diff)
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestWriteErrors name what failed.
func TestWriteErrors(t *testing.T) {
	if err := Write(failing{}, []rec{{A: "x"}}, "usage record"); err == nil || !strings.Contains(err.Error(), "writing usage records: disk full") {
		t.Errorf("Write to a failing writer: %v", err)
	}
	if err := Encode(&bytes.Buffer{}, []func(){func() {}}, "audit record"); err == nil || !strings.Contains(err.Error(), "encoding audit record 1 of 1") {
		t.Errorf("Encode of what JSON cannot hold: %v", err)
	}
}
