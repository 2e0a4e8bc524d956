package contract

import "testing"

func TestPortFromAddrEnv(t *testing.T) {
	cases := map[string]struct {
		value string
		want  int
	}{
		"unset":              {"", 0},
		"localhost":          {"localhost:9090", 9090},
		"loopback":           {"127.0.0.1:8080", 8080},
		"IPv6":               {"[::1]:9091", 9091},
		"no host":            {":7000", 7000},
		"no port":            {"localhost", 0},
		"not a number":       {"localhost:grpc", 0},
		"out of range":       {"localhost:70000", 0},
		"zero":               {"localhost:0", 0},
		"a URL, not address": {"http://localhost:8080", 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == SandboxdGRPCAddrEnv {
					return tc.value
				}
				return "localhost:1"
			}
			if got := PortFromAddrEnv(getenv, SandboxdGRPCAddrEnv); got != tc.want {
				t.Errorf("PortFromAddrEnv(%s=%q) = %d, want %d", SandboxdGRPCAddrEnv, tc.value, got, tc.want)
			}
		})
	}
}
