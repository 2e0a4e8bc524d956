package cli

import (
	"fmt"

	"github.com/spf13/pflag"
)

// inertFlag is a flag of agent-sandbox's controller (v0.5 and v1.0 Deployments and Helm chart)
// that has no kubox equivalent. kubox-controller accepts it, so those manifests start unchanged,
// and logs why it has no effect.
type inertFlag struct {
	name string
	// boolean flags may be given without a value; the others take any value.
	boolean bool
	why     string
}

const noWebhook = "kubox serves v1beta1 only and validates with CEL and ValidatingAdmissionPolicies; it runs no webhook"

// inertFlags are agent-sandbox's controller flags that kubox accepts without effect.
var inertFlags = []inertFlag{
	{"enable-webhook", true, noWebhook},
	{"manage-webhook-certs", true, noWebhook},
	{"webhook-port", false, noWebhook},
	{"webhook-cert-dir", false, noWebhook},
	{"webhook-cert-name", false, noWebhook},
	{"webhook-key-name", false, noWebhook},
	{"webhook-service-name", false, noWebhook},
	{"webhook-namespace", false, noWebhook},
	{"enable-tracing", true, "kubox exports traces when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set"},
	{"enable-pprof", true, "kubox-controller serves pprof only at --pprof-bind-address"},
	{"enable-pprof-debug", true, "kubox-controller serves pprof only at --pprof-bind-address, with the runtime's default rates"},
	{"pprof-block-profile-rate", false, "kubox-controller serves pprof only at --pprof-bind-address, with the runtime's default rates"},
	{"pprof-mutex-profile-fraction", false, "kubox-controller serves pprof only at --pprof-bind-address, with the runtime's default rates"},
	{"cache-label-selectors", true, "kubox always scopes its Pod, Service and PVC caches by label"},
	{"enable-warm-pool-eviction", true, "kubox always marks unclaimed warm-pool Pods safe to evict unless the template says otherwise, and removes the mark when a claim takes the sandbox"},
	{"sandbox-write-behind-window", false, "kubox writes each status once per reconcile pass, when it changed"},
}

// bindInertFlags defines inertFlags on fs; --help lists each with why it has no effect.
func bindInertFlags(fs *pflag.FlagSet) {
	for _, fl := range inertFlags {
		usage := "agent-sandbox flag, accepted without effect: " + fl.why
		if fl.boolean {
			fs.Bool(fl.name, false, usage)
		} else {
			fs.String(fl.name, "", usage)
		}
	}
}

// InertNotes says, for each inert flag given on the command line, why it has no effect. Call it
// after the FlagSet is parsed.
func (f *Flags) InertNotes() []string {
	why := make(map[string]string, len(inertFlags))
	for _, fl := range inertFlags {
		why[fl.name] = fl.why
	}
	var notes []string
	f.fs.Visit(func(fl *pflag.Flag) {
		if w, ok := why[fl.Name]; ok {
			notes = append(notes, fmt.Sprintf("--%s=%s has no effect: %s", fl.Name, fl.Value.String(), w))
		}
	})
	return notes
}
