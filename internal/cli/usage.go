package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/usage"
)

// usageS3Flags prefixes kubox usage's bucket flags, each named for its field of kubox-controller's
// usage.sinks.s3 configuration (--usage-s3-bucket for usage.sinks.s3.bucket).
const usageS3Flags = "usage-s3"

// usageOptions are kubox usage's flags.
type usageOptions struct {
	s3                         objstore.Config
	allNamespaces, ended       bool
	by                         string
	principal, template, claim string
	since, until               string
	limit                      int
	outputFormat               string
}

func newUsage(g *globalOptions) *cobra.Command { return usageCommand(g, &usageOptions{}) }

// usageCommand is kubox usage, its flags set into o.
func usageCommand(g *globalOptions, o *usageOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Add up what sandboxes used, by namespace, template, principal, claim or sandbox",
		Long: `Add up the usage records kubox-controller wrote to its usage bucket (one per sandbox, written
when the sandbox is deleted; docs/usage.md) and print one row per group (--by): the sandboxes of
the namespace (-n, or every namespace with -A) whose life overlaps the time range --since to
--until, optionally only those of one --principal, --template or --claim.

The records are read from the bucket itself, with the bucket's credentials (--usage-s3-*: the
values of kubox-controller's usage.sinks.s3 configuration), not from the cluster: they outlive
the sandbox, and whoever may read the bucket may read them. Nothing in a sandbox can reach them.

A record is counted whole in every range its sandbox's life overlaps: its figures are totals
over that life. With --ended, only the sandboxes that ended in the range are counted, so that
each sandbox is in exactly one of adjacent ranges (billing periods). Groups other than namespace are within a namespace: a principal, template or
claim of the same name in two namespaces is two rows.

Columns: SANDBOXES the records added up; RUNNING-S and SUSPENDED-S the seconds running and
suspended; WAKES the resumes from suspended; REQUESTED-CPU-CORE-S and REQUESTED-MEM-GIB-S what
the sandboxes' Pods requested (CPU cores, memory GiB) times their running seconds: reserved,
not used. MEASURED-CPU-CORE-S and MEASURED-MEM-GIB-S are what the kubelet measured: "-" when no
record had measured figures, and "(N of M)" when only N of the row's M sandboxes had them.
Requested figures are never shown as measured.`,
		Example: `  # team-a's last day, one row per principal (the label the controller's usage.principalLabel names)
  kubox usage -n team-a --by principal --usage-s3-endpoint s3.example.com --usage-s3-bucket usage \
    --usage-s3-access-key-id-file ~/.kubox/usage-id --usage-s3-secret-access-key-file ~/.kubox/usage-secret

  # Every namespace's sandboxes that ended in November, for billing, as JSON
  kubox usage -A --ended --since 2026-11-01T00:00:00Z --until 2026-12-01T00:00:00Z -o json [--usage-s3-... flags]

  # One principal's sandboxes over the last week, one row each
  kubox usage -n team-a --principal alice --since 168h --by sandbox [--usage-s3-... flags]`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, g)
		},
	}
	f := cmd.Flags()
	o.s3.AddFlags(f, objstore.Flags{Name: usageS3Flags, When: "the usage bucket",
		Bucket: "the bucket kubox-controller writes its usage records to (its usage.sinks.s3.bucket)",
		Prefix: "the folder of the bucket the records are under (kubox-controller's usage.sinks.s3.prefix)"})
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "add up the records of every namespace, not only -n's")
	f.StringVar(&o.by, "by", string(usage.ByNamespace), "one row per: namespace, template, principal, claim or sandbox")
	f.StringVar(&o.principal, "principal", "", "only the records of this principal (the value of the label kubox-controller's usage.principalLabel names)")
	f.StringVar(&o.template, "template", "", "only the records of sandboxes of this SandboxTemplate")
	f.StringVar(&o.claim, "claim", "", "only the records of the sandbox of this SandboxClaim")
	f.StringVar(&o.since, "since", "24h", "the range starts this long before --until (e.g. 24h, 168h), or at this RFC 3339 time (e.g. 2026-12-01T00:00:00Z)")
	f.StringVar(&o.until, "until", "", "the range ends at this RFC 3339 time (excluded); default: now")
	f.BoolVar(&o.ended, "ended", false, "select the sandboxes that ended in the range, not those whose life overlaps it: "+
		"each sandbox falls in exactly one of adjacent ranges, as billing periods need")
	f.IntVar(&o.limit, "limit", 10000, "read at most this many records; past it print nothing and say so; 0: no limit")
	f.StringVarP(&o.outputFormat, "output", "o", outputTable, "output format: table, or json (the range and the rows)")
	_ = cmd.RegisterFlagCompletionFunc("by", cobra.FixedCompletions(
		[]string{"namespace", "template", "principal", "claim", "sandbox"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// usageJSON is what -o json prints.
type usageJSON struct {
	By    usage.By    `json:"by"`
	Since time.Time   `json:"since"`
	Until time.Time   `json:"until"`
	Rows  []usage.Row `json:"rows"`
}

func (o *usageOptions) run(cmd *cobra.Command, g *globalOptions) error {
	ns := ""
	if !o.allNamespaces {
		var err error
		if ns, err = g.namespace(); err != nil {
			return err
		}
	}
	q, err := o.query(time.Now(), ns)
	if err != nil {
		return err
	}
	by := usage.By(o.by) // checked by query
	r, err := usage.NewReader(o.s3)
	if err != nil {
		return err
	}
	res, err := r.Read(cmd.Context(), q)
	if err != nil {
		return err
	}
	for _, d := range res.Damaged {
		_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "skipped an object that is not a usage record: %s\n", d)
	}
	if res.Truncated {
		return fmt.Errorf("more than --limit %d usage records match %s from %s to %s, and a sum over some of them would be wrong: "+
			"narrow the range (--since, --until) or the selection (-n, --principal, --template, --claim), or raise --limit (0: no limit)",
			q.Limit, describeUsageQuery(q), q.Since.UTC().Format(time.RFC3339), q.Until.UTC().Format(time.RFC3339))
	}
	if len(res.Records) == 0 {
		_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "no usage records of %s from %s to %s (%d objects read)\n",
			describeUsageQuery(q), q.Since.UTC().Format(time.RFC3339), q.Until.UTC().Format(time.RFC3339), res.Objects)
	}
	rows, err := usage.Aggregate(res.Records, by)
	if err != nil {
		return err
	}
	if o.outputFormat == outputJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(usageJSON{By: by, Since: q.Since.UTC(), Until: q.Until.UTC(), Rows: rows})
	}
	return printUsageTable(cmd.OutOrStdout(), by, rows)
}

// query is the usage.Query the flags select in namespace (-n's; with -A every namespace), now
// being the time --until defaults to.
func (o *usageOptions) query(now time.Time, namespace string) (usage.Query, error) {
	if o.outputFormat != outputTable && o.outputFormat != outputJSON {
		return usage.Query{}, fmt.Errorf("-o %q is not one of table, json", o.outputFormat)
	}
	if _, err := usage.ParseBy(o.by); err != nil {
		return usage.Query{}, fmt.Errorf("--by %w", err)
	}
	if o.limit < 0 {
		return usage.Query{}, fmt.Errorf("--limit %d is negative: give 0 for no limit, or how many records to read at most", o.limit)
	}
	if o.allNamespaces {
		namespace = ""
	}
	q := usage.Query{Namespace: namespace, Principal: o.principal, Template: o.template, Claim: o.claim, Until: now, Ended: o.ended, Limit: o.limit}
	if o.until != "" {
		t, err := time.Parse(time.RFC3339, o.until)
		if err != nil {
			return q, fmt.Errorf("--until %q is not an RFC 3339 time such as 2026-12-07T09:00:00Z", o.until)
		}
		q.Until = t
	}
	if d, err := time.ParseDuration(o.since); err == nil {
		if d < 0 {
			return q, fmt.Errorf("--since %q is negative: give how long before --until the range starts, e.g. 24h", o.since)
		}
		q.Since = q.Until.Add(-d)
	} else if q.Since, err = time.Parse(time.RFC3339, o.since); err != nil {
		return q, fmt.Errorf("--since %q is neither a duration such as 24h nor an RFC 3339 time such as 2026-12-07T08:00:00Z", o.since)
	}
	if !q.Since.Before(q.Until) {
		return q, fmt.Errorf("--since gives %s, which is not before --until %s", q.Since.UTC().Format(time.RFC3339), q.Until.UTC().Format(time.RFC3339))
	}
	return q, nil
}

func describeUsageQuery(q usage.Query) string {
	s := "every namespace"
	if q.Namespace != "" {
		s = "namespace " + q.Namespace
	}
	for _, sel := range [][2]string{{"principal", q.Principal}, {"template", q.Template}, {"claim", q.Claim}} {
		if sel[1] != "" {
			s += ", " + sel[0] + " " + sel[1]
		}
	}
	return s
}

func printUsageTable(w io.Writer, by usage.By, rows []usage.Row) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	header := "NAMESPACE\t"
	if by != usage.ByNamespace {
		header += strings.ToUpper(string(by)) + "\t"
	}
	if by == usage.BySandbox {
		header += "UID\t"
	}
	_, _ = fmt.Fprintln(tw, header+"SANDBOXES\tRUNNING-S\tSUSPENDED-S\tWAKES\tREQUESTED-CPU-CORE-S\tREQUESTED-MEM-GIB-S\tMEASURED-CPU-CORE-S\tMEASURED-MEM-GIB-S")
	for i := range rows {
		r := &rows[i]
		line := usageCell(r.Namespace) + "\t"
		if by != usage.ByNamespace {
			line += usageCell(r.Value) + "\t"
		}
		if by == usage.BySandbox {
			line += usageCell(r.UID) + "\t"
		}
		cpu, mem := "-", "-"
		if m := r.Measured; m != nil {
			cpu, mem = fmt.Sprintf("%.2f", m.CPUSeconds), fmt.Sprintf("%.2f", m.MemoryGiBSeconds)
			if m.Sandboxes < r.Sandboxes {
				part := fmt.Sprintf(" (%d of %d)", m.Sandboxes, r.Sandboxes)
				cpu, mem = cpu+part, mem+part
			}
		}
		_, _ = fmt.Fprintf(tw, "%s%d\t%.1f\t%.1f\t%d\t%.2f\t%.2f\t%s\t%s\n", line, r.Sandboxes, r.RunningSeconds, r.SuspendedSeconds,
			r.Wakes, r.RequestedCPUCoreSeconds, r.RequestedMemoryGiBSeconds, cpu, mem)
	}
	return tw.Flush()
}

// usageCell is a value in a table cell: none when empty, quoted when it holds anything but
// printable characters, so that no value moves the terminal's cursor or breaks the columns.
func usageCell(s string) string {
	if s == "" {
		return none
	}
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == '\t' || r == ' ' }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}
