package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

// parseArgs parses args as kubox-controller's command line and returns the options.
func parseArgs(t *testing.T, args ...string) *options {
	t.Helper()
	cmd, o := newCommand()
	if done, err := o.parse(cmd, args); done || err != nil {
		t.Fatalf("parse(%q): done %v, err %v; want the flags parsed", args, done, err)
	}
	return o
}

func parse(t *testing.T, args ...string) (*configv1alpha1.ControllerConfiguration, error) {
	t.Helper()
	return parseArgs(t, args...).flags.Config()
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFlagsOverrideTheFile(t *testing.T) {
	file := writeConfig(t, `apiVersion: config.kubox.dev/v1alpha1
kind: ControllerConfiguration
clusterDomain: file.example
controllers:
  sandbox:
    workers: 7
metrics:
  bindAddress: ":9000"
`)
	cases := map[string]struct {
		args []string
		want func(*configv1alpha1.ControllerConfiguration)
	}{
		"no flags: defaults": {
			want: func(*configv1alpha1.ControllerConfiguration) {},
		},
		"file only": {
			args: []string{"--config", file},
			want: func(c *configv1alpha1.ControllerConfiguration) {
				c.ClusterDomain = "file.example"
				c.Controllers.Sandbox.Workers = ptr.To[int32](7)
				c.Metrics.BindAddress = ":9000"
			},
		},
		"flags given win over the file, flags not given leave it": {
			args: []string{"--config", file, "--sandbox-concurrent-workers=3", "--leader-elect=false",
				"--leader-election-namespace=kube-system", "--kube-api-qps=20", "--kube-api-burst=40",
				"--api-connections=4", "--separate-watch-connection",
				"--health-probe-bind-address=127.0.0.1:1", "--cluster-domain=flag.example",
				"--extensions=false", "--sandbox-template-concurrent-workers=2", "--sandbox-warm-pool-concurrent-workers=3",
				"--sandbox-claim-concurrent-workers=9", "--sandbox-warm-pool-max-batch-size=11",
				"--sandbox-warm-pool-readiness-grace-period=30s", "--sandbox-warm-pool-unschedulable-recheck-interval=2m",
				"--sandbox-warm-pool-replenish-delay=750ms", "--sandbox-warm-pool-max-refill-rate=12.5",
				"--disable-claim-events"},
			want: func(c *configv1alpha1.ControllerConfiguration) {
				c.ClusterDomain = "flag.example"
				c.Controllers.Sandbox.Workers = ptr.To[int32](3)
				c.Metrics.BindAddress = ":9000"
				c.Health.BindAddress = "127.0.0.1:1"
				c.LeaderElection.Enabled = ptr.To(false)
				c.LeaderElection.Namespace = "kube-system"
				c.ClientConnection.QPS = ptr.To[float32](20)
				c.ClientConnection.Burst = ptr.To[int32](40)
				c.ClientConnection.APIConnections = ptr.To[int32](4)
				c.ClientConnection.SeparateWatchConnection = ptr.To(true)
				c.Controllers.Extensions = ptr.To(false)
				c.Controllers.SandboxTemplate.Workers = ptr.To[int32](2)
				c.Controllers.SandboxWarmPool.Workers = ptr.To[int32](3)
				c.Controllers.SandboxClaim.Workers = ptr.To[int32](9)
				c.Controllers.SandboxWarmPool.MaxBatchSize = ptr.To[int32](11)
				c.Controllers.SandboxWarmPool.ReadinessGracePeriod = &metav1.Duration{Duration: 30 * time.Second}
				c.Controllers.SandboxWarmPool.UnschedulableRecheckInterval = &metav1.Duration{Duration: 2 * time.Minute}
				c.Controllers.SandboxWarmPool.ReplenishDelay = &metav1.Duration{Duration: 750 * time.Millisecond}
				c.Controllers.SandboxWarmPool.MaxRefillRate = ptr.To[float32](12.5)
				c.Controllers.SandboxClaim.Events = ptr.To(false)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := &configv1alpha1.ControllerConfiguration{}
			configv1alpha1.SetDefaults(want)
			tc.want(want)
			got, err := parse(t, tc.args...)
			if err != nil {
				t.Fatalf("Config: %v", err)
			}
			want.TypeMeta, got.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("configuration (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlagsAreValidated(t *testing.T) {
	_, err := parse(t, "--sandbox-concurrent-workers=0")
	if err == nil || !strings.Contains(err.Error(), "controllers.sandbox.workers") {
		t.Fatalf("Config with 0 workers: got %v, want an error naming controllers.sandbox.workers", err)
	}
}

// TestAgentSandboxFlagSpellings parses every flag kubox-controller takes, agent-sandbox's names
// among them, as Go's flag package spells them (one dash, as agent-sandbox's manifests and chart
// pass them) and as pflag does (two dashes), each with "=value" and with the value as the next
// argument, and wants the same configuration, logging options and kubeconfig from each.
func TestAgentSandboxFlagSpellings(t *testing.T) {
	file := writeConfig(t, "apiVersion: config.kubox.dev/v1alpha1\nkind: ControllerConfiguration\nclusterDomain: file.example\n")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	valued := [][2]string{
		{"config", file},
		{"kubeconfig", kubeconfig},
		{"cluster-domain", "flag.example"},
		{"metrics-bind-address", ":9090"},
		{"health-probe-bind-address", ":9091"},
		{"leader-election-namespace", "agent-sandbox-system"},
		{"kube-api-qps", "50"},
		{"kube-api-burst", "70"},
		{"api-connections", "2"},
		{"sandbox-concurrent-workers", "5"},
		{"sandbox-template-concurrent-workers", "2"},
		{"sandbox-warm-pool-concurrent-workers", "3"},
		{"sandbox-claim-concurrent-workers", "4"},
		{"sandbox-warm-pool-max-batch-size", "6"},
		{"sandbox-warm-pool-readiness-grace-period", "45s"},
		{"sandbox-warm-pool-unschedulable-recheck-interval", "3m"},
		{"sandbox-warm-pool-replenish-delay", "0s"},
		{"sandbox-warm-pool-max-refill-rate", "20"},
		{"zap-log-level", "debug"},
		{"zap-encoder", "console"},
		{"zap-stacktrace-level", "panic"},
		{"zap-time-encoding", "iso8601"},
	}
	boolean := []string{"leader-elect=false", "extensions=false", "disable-claim-events", "zap-devel", "separate-watch-connection"}
	spellings := map[string]func(dash, name, value string) []string{
		"name=value": func(dash, name, value string) []string { return []string{dash + name + "=" + value} },
		"name value": func(dash, name, value string) []string { return []string{dash + name, value} },
	}
	want := &configv1alpha1.ControllerConfiguration{}
	configv1alpha1.SetDefaults(want)
	want.ClusterDomain = "flag.example"
	want.Metrics.BindAddress = ":9090"
	want.Health.BindAddress = ":9091"
	want.LeaderElection.Enabled = ptr.To(false)
	want.LeaderElection.Namespace = "agent-sandbox-system"
	want.ClientConnection.QPS = ptr.To[float32](50)
	want.ClientConnection.Burst = ptr.To[int32](70)
	want.ClientConnection.APIConnections = ptr.To[int32](2)
	want.ClientConnection.SeparateWatchConnection = ptr.To(true)
	want.Controllers.Extensions = ptr.To(false)
	want.Controllers.Sandbox.Workers = ptr.To[int32](5)
	want.Controllers.SandboxTemplate.Workers = ptr.To[int32](2)
	want.Controllers.SandboxWarmPool.Workers = ptr.To[int32](3)
	want.Controllers.SandboxClaim.Workers = ptr.To[int32](4)
	want.Controllers.SandboxWarmPool.MaxBatchSize = ptr.To[int32](6)
	want.Controllers.SandboxWarmPool.ReadinessGracePeriod = &metav1.Duration{Duration: 45 * time.Second}
	want.Controllers.SandboxWarmPool.UnschedulableRecheckInterval = &metav1.Duration{Duration: 3 * time.Minute}
	want.Controllers.SandboxWarmPool.ReplenishDelay = &metav1.Duration{Duration: 0}
	want.Controllers.SandboxWarmPool.MaxRefillRate = ptr.To[float32](20)
	want.Controllers.SandboxClaim.Events = ptr.To(false)

	for _, dash := range []string{"-", "--"} {
		for spelling, spell := range spellings {
			t.Run(dash+spelling, func(t *testing.T) {
				kc := kubeconfigFlag(t)
				var args []string
				for _, f := range valued {
					args = append(args, spell(dash, f[0], f[1])...)
				}
				for _, b := range boolean {
					args = append(args, dash+b)
				}
				o := parseArgs(t, args...)
				got, err := o.flags.Config()
				if err != nil {
					t.Fatalf("Config: %v", err)
				}
				got.TypeMeta = want.TypeMeta
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("configuration from %q (-want +got):\n%s", args, diff)
				}
				if kc.Value.String() != kubeconfig {
					t.Errorf("kubeconfig %q, want %q", kc.Value.String(), kubeconfig)
				}
				z := o.zap
				if !z.Development || z.Level == nil || !z.Level.Enabled(zapcore.DebugLevel) ||
					z.StacktraceLevel == nil || z.StacktraceLevel.Enabled(zapcore.ErrorLevel) || !z.StacktraceLevel.Enabled(zapcore.PanicLevel) ||
					z.NewEncoder == nil || z.TimeEncoder == nil {
					t.Errorf("zap options %+v, want development, debug level, panic stack traces, an encoder and a time encoder", z)
				}
			})
		}
	}
}

// kubeconfigFlag returns controller-runtime's --kubeconfig flag, which parsing sets for the
// whole process, and resets it when the test ends.
func kubeconfigFlag(t *testing.T) *pflag.Flag {
	t.Helper()
	cmd, _ := newCommand()
	kc := cmd.Flags().Lookup("kubeconfig")
	if kc == nil {
		t.Fatal("kubox-controller has no --kubeconfig flag")
	}
	t.Cleanup(func() { _ = kc.Value.Set("") })
	return kc
}

func TestGoStyleArgs(t *testing.T) {
	for name, tc := range map[string]struct {
		args, want []string
	}{
		"one dash becomes two": {
			args: []string{"-leader-elect=false", "-zap-log-level=debug", "-config", "/etc/c.yaml"},
			want: []string{"--leader-elect=false", "--zap-log-level=debug", "--config", "/etc/c.yaml"},
		},
		"two dashes stay": {
			args: []string{"--leader-elect=false", "--kubeconfig", "/k"},
			want: []string{"--leader-elect=false", "--kubeconfig", "/k"},
		},
		"a flag's value is never rewritten": {
			args: []string{"-config", "-odd-file-name", "--leader-election-namespace", "-x"},
			want: []string{"--config", "-odd-file-name", "--leader-election-namespace", "-x"},
		},
		"a boolean takes no next argument": {
			args: []string{"-disable-claim-events", "-extensions=false"},
			want: []string{"--disable-claim-events", "--extensions=false"},
		},
		"shorthands, unknown names and what follows -- ": {
			args: []string{"-h", "-v", "-bogus", "plain", "--", "-leader-elect"},
			want: []string{"-h", "-v", "--bogus", "plain", "--", "-leader-elect"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cmd, _ := newCommand()
			if diff := cmp.Diff(tc.want, goStyleArgs(cmd.Flags(), tc.args)); diff != "" {
				t.Errorf("goStyleArgs(%q) (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}

func TestHelpVersionAndBadArguments(t *testing.T) {
	for name, tc := range map[string]struct {
		args    []string
		wantOut []string
		wantErr string
	}{
		"--help":       {args: []string{"--help"}, wantOut: []string{"Usage:", "--leader-elect", "--zap-log-level", "--kubeconfig", "-leader-elect=false"}},
		"-help":        {args: []string{"-help"}, wantOut: []string{"Usage:", "--sandbox-concurrent-workers"}},
		"-h":           {args: []string{"-h"}, wantOut: []string{"Usage:"}},
		"--version":    {args: []string{"--version"}, wantOut: []string{"commit"}},
		"-version":     {args: []string{"-version"}, wantOut: []string{"commit"}},
		"unknown flag": {args: []string{"-no-such-flag"}, wantErr: "unknown flag: --no-such-flag"},
		"bad value":    {args: []string{"-kube-api-burst=many"}, wantErr: "kube-api-burst"},
		"argument":     {args: []string{"--leader-elect=false", "extra"}, wantErr: `unexpected arguments ["extra"]`},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := NewCommand()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Execute(%q) = %v, want an error containing %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Execute(%q): %v", tc.args, err)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output of %q does not contain %q:\n%s", tc.args, w, out.String())
				}
			}
		})
	}
}

// TestAgentSandboxV1FlagSet parses the flags agent-sandbox v1's controller Deployments and Helm
// chart may pass, in both spellings: those kubox maps set its configuration, and each of the
// others is accepted with a note saying why it has no effect.
func TestAgentSandboxV1FlagSet(t *testing.T) {
	mapped := []string{"extensions=true", "leader-elect=true", "disable-claim-observability-annotations",
		"sandbox-warm-pool-readiness-grace-period=1m", "kube-api-qps=-1", "kube-api-burst=10"}
	var inert []string
	for _, fl := range inertFlags {
		if fl.boolean {
			inert = append(inert, fl.name) // given without a value, as a chart's boolean
		} else {
			inert = append(inert, fl.name+"=7")
		}
	}
	for _, dash := range []string{"-", "--"} {
		t.Run(dash, func(t *testing.T) {
			var args []string
			for _, a := range append(append([]string{}, mapped...), inert...) {
				args = append(args, dash+a)
			}
			o := parseArgs(t, args...)
			cfg, err := o.flags.Config()
			if err != nil {
				t.Fatalf("Config of agent-sandbox v1's flags %q: %v", args, err)
			}
			if got := ptr.Deref(cfg.Controllers.SandboxClaim.ObservabilityAnnotations, true); got {
				t.Errorf("observabilityAnnotations = %v after --disable-claim-observability-annotations; want false", got)
			}
			if got := cfg.Controllers.SandboxWarmPool.ReadinessGracePeriod; got == nil || got.Duration != time.Minute {
				t.Errorf("readinessGracePeriod = %v; want 1m", got)
			}
			notes := o.flags.InertNotes()
			if len(notes) != len(inertFlags) {
				t.Errorf("%d notes for %d inert flags: %q", len(notes), len(inertFlags), notes)
			}
			for _, fl := range inertFlags {
				found := false
				for _, n := range notes {
					found = found || (strings.HasPrefix(n, "--"+fl.name+"=") && strings.HasSuffix(n, "has no effect: "+fl.why))
				}
				if !found {
					t.Errorf("no note says why --%s has no effect; notes %q", fl.name, notes)
				}
			}
		})
	}
}
