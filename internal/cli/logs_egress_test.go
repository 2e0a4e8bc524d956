package cli

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

func TestIsEgressLineOf(t *testing.T) {
	cases := map[string]bool{
		`{"msg":"Egress","sandbox":"ns/box","domain":"pypi.org","verdict":"allowed"}`:   true,
		`{"msg":"Egress","sandbox":"ns/box-2","domain":"pypi.org","verdict":"allowed"}`: false,
		`{"msg":"Egress","sandbox":"other/box","domain":"pypi.org"}`:                    false,
		`{"msg":"Starting","sandbox":"ns/box"}`:                                         false,
		`not json ns/box`:                                                               false,
	}
	for line, want := range cases {
		if got := isEgressLineOf([]byte(line), "ns/box"); got != want {
			t.Errorf("isEgressLineOf(%s) = %v, want %v", line, got, want)
		}
	}
}

func TestEgressLogsWithoutProxy(t *testing.T) {
	var out bytes.Buffer
	err := egressLogs(t.Context(), fake.NewClientset(), "kubox-system", "ns", "box", &logsOptions{tail: -1}, &out)
	if err == nil || !strings.Contains(err.Error(), "no kubox-egress Pod in namespace kubox-system: set --egress-namespace") {
		t.Errorf("egressLogs without kubox-egress: %v; want the fix", err)
	}
}
