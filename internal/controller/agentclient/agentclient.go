// Package agentclient is how kubox-controller reaches a sandbox's kubox-agent: at the sandbox's
// first Pod IP and the port status.agent records, with the sandbox's agent token, which the
// controller derives from its key (api/contract). The idle check (ActivityService) and the
// delivery of a claim's settings (SettingsService) use it.
package agentclient

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Dialer reaches the agents of every sandbox. One transport serves them all, without keep-alive:
// a sandbox is called seldom (once per idle window, once per claim) and a cluster has thousands.
type Dialer struct {
	key       []byte
	transport http.RoundTripper
}

// New returns a Dialer whose agent tokens derive from key (nil: every call fails saying so).
func New(key []byte) *Dialer {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableKeepAlives = true
	t.Proxy = nil // Pod IPs are never reached through a proxy
	return &Dialer{key: key, transport: t}
}

// Endpoint returns an HTTP client that sends sb's agent token, and the base URL of sb's agent
// API, or an error naming what is missing.
func (d *Dialer) Endpoint(sb *sandboxv1beta1.Sandbox) (*http.Client, string, error) {
	switch {
	case len(d.key) == 0:
		return nil, "", errors.New("the controller has no agent token key: set agent.tokenKeyFile in the controller configuration")
	case sb.Status.Agent == nil || sb.Status.Agent.Port == 0 || len(sb.Status.PodIPs) == 0:
		return nil, "", fmt.Errorf("sandbox %s reports no agent port or Pod IP yet", sb.Name)
	}
	hc := &http.Client{Transport: &contract.BearerTransport{Token: contract.DeriveAgentToken(d.key, sb.UID), Base: d.transport}}
	return hc, "http://" + net.JoinHostPort(sb.Status.PodIPs[0], strconv.Itoa(int(sb.Status.Agent.Port))), nil
}
