package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubox-dev/kubox/internal/audit"
	"github.com/kubox-dev/kubox/internal/objstore"
)

// auditOptions are kubox audit's flags.
type auditOptions struct {
	target
	s3           objstore.Config
	since        time.Duration
	from, until  string
	limit        int
	outputFormat string
}

func newAudit(g *globalOptions) *cobra.Command { return auditCommand(g, &auditOptions{}) }

// auditCommand is kubox audit, its flags set into o.
func auditCommand(g *globalOptions, o *auditOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit [NAME]",
		Short: "Print the audit trail of a sandbox: every request kubox-router let through to it",
		Long: `Print, in time order, the records kubox-router wrote to its audit bucket (--audit-sink=s3,
docs/audit.md) about the Sandbox NAME (with --claim, the sandbox of the claim NAME; without NAME,
every sandbox of the namespace): who asked, what (a command line, a file and what was done to it, a
terminal session, another call), the status, the bytes each way and how long it took.

The records are read from the bucket itself, with the bucket's credentials (--audit-s3-*, the
same flags as kubox-router's), not from the cluster: they outlive the sandbox, and whoever may
read the bucket may read them. Nothing in a sandbox can reach them.

Columns: TIME the request reached the router (UTC); PRINCIPAL the caller the router
authenticated; SANDBOX; WHAT the operation (exec/pty: the command line; file: the action and the
path; rpc: the procedure; another port: the method and path); STATUS the HTTP status the router
sent (101 an upgraded connection, 502 the sandbox did not answer; "open" a terminal session
that had started); IN and OUT the body bytes from and to the client; TOOK the duration.`,
		Example: `  kubox audit python-x7k2q --audit-s3-endpoint s3.example.com --audit-s3-bucket audit \
    --audit-s3-access-key-id-file ~/.kubox/audit-id --audit-s3-secret-access-key-file ~/.kubox/audit-secret
  kubox audit --claim kubox-x7k2 --since 1h [--audit-s3-... flags]
  kubox audit -n team-a --from 2026-12-07T08:00:00Z --until 2026-12-07T09:00:00Z -o json [--audit-s3-... flags]`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, g, args)
		},
	}
	f := cmd.Flags()
	o.addFlag(f)
	o.s3.AddFlags(f, objstore.Flags{Name: "audit-s3", When: "the audit bucket",
		Bucket: "the bucket kubox-router writes its records to (its --audit-s3-bucket)",
		Prefix: "the folder of the bucket the records are under (kubox-router's --audit-s3-prefix)"})
	f.DurationVar(&o.since, "since", 24*time.Hour, "print the records of this long before now (or before --until)")
	f.StringVar(&o.from, "from", "", "print the records from this time on (RFC 3339, e.g. 2026-12-07T08:00:00Z); overrides --since")
	f.StringVar(&o.until, "until", "", "print the records before this time (RFC 3339); default: now")
	f.IntVar(&o.limit, "limit", 1000, "print at most this many records, the latest; 0: all")
	f.StringVarP(&o.outputFormat, "output", "o", outputTable, "output format: table, or json (the records as stored, one per line)")
	return cmd
}

func (o *auditOptions) run(cmd *cobra.Command, g *globalOptions, args []string) error {
	q, err := o.query(time.Now())
	if err != nil {
		return err
	}
	if q.Namespace, err = g.namespace(); err != nil {
		return err
	}
	if len(args) == 1 {
		if o.claim {
			q.Claim = args[0]
		} else {
			q.Sandbox = args[0]
		}
	} else if o.claim {
		return errors.New("--claim needs the claim's NAME: kubox audit --claim NAME")
	}
	r, err := audit.NewReader(o.s3)
	if err != nil {
		return err
	}
	res, err := r.Read(cmd.Context(), q)
	if err != nil {
		return err
	}
	for _, d := range res.Damaged {
		_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "skipped a line that is not a record: %s\n", d)
	}
	if res.Truncated {
		_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "more than %d records: printing the latest %d (--limit 0 prints all)\n", q.Limit, q.Limit)
	}
	if len(res.Records) == 0 {
		_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "no audit records of %s from %s to %s (%d objects read)\n",
			describeQuery(q), q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339), res.Objects)
	}
	if o.outputFormat == outputJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		for i := range res.Records {
			if err := enc.Encode(&res.Records[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return printAuditTable(cmd.OutOrStdout(), res.Records)
}

// query is the audit.Query the flags select, now being the time --until defaults to.
func (o *auditOptions) query(now time.Time) (audit.Query, error) {
	if o.outputFormat != outputTable && o.outputFormat != outputJSON {
		return audit.Query{}, fmt.Errorf("-o %q is not one of table, json", o.outputFormat)
	}
	if o.limit < 0 {
		return audit.Query{}, fmt.Errorf("--limit %d is negative: give 0 for all records, or how many to print", o.limit)
	}
	q := audit.Query{To: now, Limit: o.limit}
	var err error
	if o.until != "" {
		if q.To, err = time.Parse(time.RFC3339, o.until); err != nil {
			return q, fmt.Errorf("--until %q is not an RFC 3339 time such as 2026-12-07T09:00:00Z", o.until)
		}
	}
	q.From = q.To.Add(-o.since)
	if o.from != "" {
		if q.From, err = time.Parse(time.RFC3339, o.from); err != nil {
			return q, fmt.Errorf("--from %q is not an RFC 3339 time such as 2026-12-07T08:00:00Z", o.from)
		}
	}
	if !q.From.Before(q.To) {
		return q, fmt.Errorf("--from/--since give %s, which is not before --until %s", q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339))
	}
	return q, nil
}

func describeQuery(q audit.Query) string {
	switch {
	case q.Claim != "":
		return "claim " + q.Namespace + "/" + q.Claim
	case q.Sandbox != "":
		return "sandbox " + q.Namespace + "/" + q.Sandbox
	}
	return "namespace " + q.Namespace
}

func printAuditTable(w io.Writer, records []audit.Record) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "TIME\tPRINCIPAL\tSANDBOX\tWHAT\tSTATUS\tIN\tOUT\tTOOK")
	for i := range records {
		r := &records[i]
		status := strconv.Itoa(r.Status)
		if r.Phase == audit.PhaseOpen {
			status = "open"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Principal, r.Sandbox,
			auditWhat(r), status, r.BytesIn, r.BytesOut, time.Duration(r.DurationSeconds*float64(time.Second)).Round(time.Millisecond))
	}
	return tw.Flush()
}

// auditWhat is a record's WHAT column: a line of at most 100 characters.
func auditWhat(r *audit.Record) string {
	s := r.Method + " " + r.Path
	if op := r.Operation; op != nil {
		switch op.Kind {
		case audit.OpExec, audit.OpPTY:
			s = op.Kind + " " + strings.Join(op.Command, " ")
		case audit.OpFile:
			s = "file " + op.Action + " " + op.Path
			if op.Destination != "" {
				s += " -> " + op.Destination
			}
		default:
			s = op.Kind + " " + op.Procedure
		}
		if op.Unread != "" {
			s += " (unread: " + op.Unread + ")"
		}
	}
	s = strings.Join(strings.Fields(s), " ") // one line: the exact command is in -o json
	if r := []rune(s); len(r) > 100 {
		s = string(r[:97]) + "..."
	}
	return s
}
