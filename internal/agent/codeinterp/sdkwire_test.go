package codeinterp_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/internal/agent/codeinterp"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// jsonNames returns the JSON names of the fields of the struct types of vs (embedded structs'
// fields included), sorted.
func jsonNames(vs ...any) []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.IsExported() && name != "-" && name != "" {
				seen[name] = true
			}
		}
	}
	for _, v := range vs {
		walk(reflect.TypeOf(v))
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestSDKWireMatchesTheServer: the Go SDK (its own module, which cannot import this package)
// declares the code interpreter's wire types again; their JSON names must be the server's, so a
// field renamed or added on one side fails here.
func TestSDKWireMatchesTheServer(t *testing.T) {
	for name, tc := range map[string]struct{ sdk, server []string }{
		// A message is a result's MIME bundle, an error, or the fields every message has (type,
		// stdout's and stderr's text and timestamp, number_of_executions' count), which the SDK
		// reads without a public type.
		"execution message": {
			sdk:    append(jsonNames(kubox.CodeResult{}, kubox.ExecutionError{}), "execution_count", "timestamp", "type"),
			server: jsonNames(codeinterp.Message{}),
		},
		"context": {sdk: jsonNames(kubox.CodeContext{}), server: jsonNames(codeinterp.Context{})},
	} {
		t.Run(name, func(t *testing.T) {
			sort.Strings(tc.sdk)
			if diff := cmp.Diff(tc.server, tc.sdk); diff != "" {
				t.Errorf("JSON names of the SDK's types (-server +sdk):\n%s", diff)
			}
		})
	}
}
