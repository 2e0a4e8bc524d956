package kubox

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// The router-mode tests that need a real kubox-agent are in test/integration/sdk
// (fakerouter_test.go): this module cannot import the agent.

// A kubeconfig without a bearer token (client certificate or basic auth; routerTransport's test
// covers both) still claims; processes and files fail, saying how to get a token.
func TestRouterModeWithoutABearerTokenSaysHowToGetOne(t *testing.T) {
	c, err := New(&rest.Config{Host: "http://127.0.0.1:1", Username: "admin", Password: "secret"},
		Options{Connection: ConnectRouter, RouterURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatalf("New: %v; want the error only when the router is used", err)
	}
	sb := &Sandbox{c: c, ns: "ns", name: "sb", obj: &sandboxv1beta1.Sandbox{}}
	_, err = sb.Run(t.Context(), "true")
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "kubectl create token") || !strings.Contains(err.Error(), "Options.Token") {
		t.Errorf("Run = %v; want ErrUnauthorized saying how to get a bearer token", err)
	}
}
