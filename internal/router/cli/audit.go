package cli

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/kubox-dev/kubox/internal/audit"
	"github.com/kubox-dev/kubox/internal/objstore"
)

// Values of --audit-sink.
const (
	auditSinkS3     = "s3"
	auditSinkOTLP   = "otlp"
	auditSinkStdout = "stdout"
)

// auditOptions are the flags of the audit trail (docs/audit.md).
type auditOptions struct {
	sinks []string
	s3    audit.S3Config
	otlp  audit.OTLPConfig
}

// addAuditFlags adds the audit trail's flags; the S3 credentials are read from files (a mounted
// Secret), never from a flag's value (package objstore).
func (o *options) addAuditFlags(f *pflag.FlagSet) {
	a, q := &o.audit, &o.cfg.AuditQueue
	f.StringSliceVar(&a.sinks, "audit-sink", nil, "record every request let through to a sandbox in these sinks: s3, otlp, stdout (default: none, no audit trail)")
	a.s3.AddFlags(f, objstore.Flags{Name: "audit-s3", When: "with --audit-sink=s3",
		Bucket: "the bucket the records go to", Prefix: "the folder of the bucket the records go under; empty: the bucket's root"})
	f.StringVar(&a.otlp.Endpoint, "audit-otlp-endpoint", "", "with --audit-sink=otlp, host:port of the OTLP/gRPC collector the records go to as logs")
	f.BoolVar(&a.otlp.Insecure, "audit-otlp-insecure", false, "with --audit-sink=otlp, talk plain gRPC to the collector instead of TLS")
	f.IntVar(&q.Size, "audit-queue-size", audit.DefaultQueueSize, "records waiting for the sinks at most; more are dropped (kubox_router_audit_records_dropped_total), never waited for")
	f.Int64Var(&q.MaxBytes, "audit-queue-bytes", audit.DefaultQueueBytes, "memory the records waiting for the sinks may hold; more are dropped, never waited for")
	f.DurationVar(&q.FlushInterval, "audit-flush-interval", audit.DefaultFlushInterval, "longest a record waits before its batch is written (one S3 object per batch)")
}

// auditSinks builds the sinks --audit-sink names.
func (o *options) auditSinks(ctx context.Context) ([]audit.Sink, error) {
	var sinks []audit.Sink
	for _, name := range slices.Compact(slices.Sorted(slices.Values(o.audit.sinks))) {
		switch name {
		case auditSinkS3:
			s, err := audit.NewS3(o.audit.s3)
			if err != nil {
				return nil, fmt.Errorf("--audit-sink=s3: %w", err)
			}
			sinks = append(sinks, s)
		case auditSinkOTLP:
			s, err := audit.NewOTLP(ctx, o.audit.otlp)
			if err != nil {
				return nil, fmt.Errorf("--audit-sink=otlp: %w", err)
			}
			sinks = append(sinks, s)
		case auditSinkStdout:
			sinks = append(sinks, audit.JSONLines{W: os.Stdout})
		default:
			return nil, fmt.Errorf("--audit-sink %q is not a sink: use s3, otlp or stdout (several with commas)", name)
		}
	}
	return sinks, nil
}
