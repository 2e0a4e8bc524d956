package kubox

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOptionsDefaults(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == RouterURLEnv {
				return v
			}
			return ""
		}
	}
	cases := map[string]struct {
		in     Options
		getenv func(string) string
		want   Options
	}{
		"zero": {getenv: env(""), want: Options{Namespace: "default", RouterNamespace: "kubox-system",
			RouterService: "sandbox-router-svc", ReadyTimeout: 3 * time.Minute}},
		"auto reads KUBOX_ROUTER_URL": {getenv: env("http://router:8080/"), want: Options{Namespace: "default",
			RouterURL: "http://router:8080", RouterNamespace: "kubox-system", RouterService: "sandbox-router-svc", ReadyTimeout: 3 * time.Minute}},
		"explicit values stay": {
			in:     Options{Namespace: "team", Connection: ConnectDirect, RouterNamespace: "r", RouterService: "s", ReadyTimeout: time.Second},
			getenv: env("http://ignored"),
			want:   Options{Namespace: "team", Connection: ConnectDirect, RouterNamespace: "r", RouterService: "s", ReadyTimeout: time.Second}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.withDefaults(tc.getenv)); diff != "" {
				t.Errorf("withDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveConnection(t *testing.T) {
	base := Options{}.withDefaults(func(string) string { return "" })
	cases := map[string]struct {
		opts      func(Options) Options
		inPod     bool
		want      Connection
		wantURL   string
		wantError string
	}{
		"auto with a router URL": {opts: func(o Options) Options { o.RouterURL = "http://127.0.0.1:18080"; return o },
			want: ConnectRouter, wantURL: "http://127.0.0.1:18080"},
		"auto in a Pod": {inPod: true, want: ConnectRouter, wantURL: "http://sandbox-router-svc.kubox-system.svc:8080"},
		"auto outside":  {want: ConnectPortForward},
		"router without URL": {opts: func(o Options) Options { o.Connection = ConnectRouter; return o },
			wantError: "Options.RouterURL is empty"},
		"direct": {opts: func(o Options) Options { o.Connection = ConnectDirect; return o }, inPod: true, want: ConnectDirect},
		"unknown": {opts: func(o Options) Options { o.Connection = "carrier-pigeon"; return o },
			wantError: `unknown Options.Connection "carrier-pigeon"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := base
			if tc.opts != nil {
				o = tc.opts(o)
			}
			got, err := o.resolveConnection(tc.inPod)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("resolveConnection error = %v; want one containing %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Connection != tc.want || got.RouterURL != tc.wantURL {
				t.Errorf("resolveConnection = %q %q; want %q %q", got.Connection, got.RouterURL, tc.want, tc.wantURL)
			}
		})
	}
}
