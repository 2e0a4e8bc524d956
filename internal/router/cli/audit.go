package cli

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/kubox-dev/kubox/internal/audit"
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
// Secret), never from a flag's value, as kubox-node's --snapshot-store-s3-* flags.
func (o *options) addAuditFlags(f *pflag.FlagSet) {
	a, q := &o.audit, &o.cfg.AuditQueue
	f.StringSliceVar(&a.sinks, "audit-sink", nil, "record every request let through to a sandbox in these sinks: s3, otlp, stdout (default: none, no audit trail)")
	f.StringVar(&a.s3.Endpoint, "audit-s3-endpoint", "", "with --audit-sink=s3, host:port of the S3 API (AWS S3, MinIO, SeaweedFS, Ceph RGW, ...)")
	f.StringVar(&a.s3.Bucket, "audit-s3-bucket", "", "with --audit-sink=s3, the bucket the records go to")
	f.StringVar(&a.s3.Prefix, "audit-s3-prefix", "", "with --audit-sink=s3, the folder of the bucket the records go under; empty: the bucket's root")
	f.StringVar(&a.s3.Region, "audit-s3-region", "", "with --audit-sink=s3, the bucket's region; empty: asked of the endpoint")
	f.BoolVar(&a.s3.Insecure, "audit-s3-insecure", false, "with --audit-sink=s3, talk plain HTTP to the endpoint instead of TLS")
	f.StringVar(&a.s3.AccessKeyIDFile, "audit-s3-access-key-id-file", "", "with --audit-sink=s3, file holding the access key id (a mounted Secret's key)")
	f.StringVar(&a.s3.SecretAccessKeyFile, "audit-s3-secret-access-key-file", "", "with --audit-sink=s3, file holding the secret access key (a mounted Secret's key)")
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
