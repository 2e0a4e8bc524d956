package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Output formats of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// none fills a table cell that has no value, as kubectl does.
const none = "<none>"

// output is the -o flag of the commands that print objects.
type output struct {
	format string
}

func (o *output) addFlag(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", outputTable, "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(
		[]string{outputTable, outputJSON, outputYAML}, cobra.ShellCompDirectiveNoFileComp))
}

func (o *output) validate() error {
	switch o.format {
	case outputTable, outputJSON, outputYAML:
		return nil
	}
	return fmt.Errorf("-o %q is not one of table, json, yaml", o.format)
}

// printObjects prints objs as json or yaml: one object as itself, several as a v1 List, as
// kubectl does. Managed fields are left out.
func printObjects(w io.Writer, format string, objs []runtime.Object, single bool) error {
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		items = append(items, printable(o))
	}
	var v any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{}}
	if single && len(items) == 1 {
		v = items[0]
	}
	var b []byte
	var err error
	if format == outputYAML {
		b, err = yaml.Marshal(v)
	} else {
		b, err = json.MarshalIndent(v, "", "    ")
		b = append(b, '\n')
	}
	if err != nil {
		return fmt.Errorf("encoding the objects as %s: %w", format, err)
	}
	_, err = w.Write(b)
	return err
}

// printable is a copy of obj with its kind set and no managed fields.
func printable(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	switch o := obj.(type) {
	case *sandboxv1beta1.Sandbox:
		o.APIVersion, o.Kind = sandboxv1beta1.GroupVersion.String(), "Sandbox"
	case *extv1beta1.SandboxClaim:
		o.APIVersion, o.Kind = extv1beta1.GroupVersion.String(), "SandboxClaim"
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj
}

// row is one line of kubox's tables: a Sandbox, with the claim that owns it, or a claim that has
// no Sandbox yet.
type row struct {
	namespace string
	sandbox   string
	claim     string
	source    string // pool/NAME or template/NAME
	ready     string // True, or False/Unknown with the reason
	podIP     string
	age       string
	expires   string
	// idle is set for a sandbox or claim with an idle policy; mode, idleReason and lastActive
	// are then its MODE, IDLE and LAST ACTIVE cells.
	idle                         bool
	mode, idleReason, lastActive string
}

// rows joins claims and sandboxes into table rows at time now, sorted by namespace and name.
func rows(claims []extv1beta1.SandboxClaim, sandboxes []sandboxv1beta1.Sandbox, now time.Time) []row {
	byName := map[string]*extv1beta1.SandboxClaim{}
	for i := range claims {
		byName[claims[i].Namespace+"/"+claims[i].Name] = &claims[i]
	}
	shown := map[string]bool{}
	var out []row
	for i := range sandboxes {
		sb := &sandboxes[i]
		r := row{
			namespace: sb.Namespace, sandbox: sb.Name, claim: none, source: sandboxSource(sb),
			ready: readyText(meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)),
			podIP: none, age: age(sb.CreationTimestamp, now), expires: expires(sb.Spec.ShutdownTime, now),
		}
		if len(sb.Status.PodIPs) > 0 {
			r.podIP = sb.Status.PodIPs[0]
		}
		setIdle(&r, sb, now)
		if name := claimOf(sb); name != "" {
			r.claim = name
			if c := byName[sb.Namespace+"/"+name]; c != nil {
				shown[sb.Namespace+"/"+name] = true
				r.source = claimSource(c)
				if e := claimExpiry(c); e != nil {
					r.expires = expires(e, now)
				}
			}
		}
		out = append(out, r)
	}
	for i := range claims {
		c := &claims[i]
		if shown[c.Namespace+"/"+c.Name] {
			continue
		}
		r := row{
			namespace: c.Namespace, sandbox: none, claim: c.Name, source: claimSource(c),
			ready: readyText(meta.FindStatusCondition(c.Status.Conditions, extv1beta1.ClaimConditionReady)),
			podIP: none, age: age(c.CreationTimestamp, now), expires: expires(claimExpiry(c), now),
		}
		if c.Status.Sandbox.Name != "" {
			r.sandbox = c.Status.Sandbox.Name
		}
		if len(c.Status.Sandbox.PodIPs) > 0 {
			r.podIP = c.Status.Sandbox.PodIPs[0]
		}
		if c.Spec.IdlePolicy != nil {
			r.idle, r.mode, r.idleReason, r.lastActive = true, none, none, none
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.sandbox != b.sandbox {
			return a.sandbox < b.sandbox
		}
		return a.claim < b.claim
	})
	return out
}

// setIdle fills r's idle cells for a sandbox with an idle policy: its operating mode ("Suspended
// (idle)" when the idle policy suspended it), the controller's last reason, and when it was last
// active: the later of the controller's lastActiveTime and the router's last-activity annotation
// (the router writes it between the controller's checks).
func setIdle(r *row, sb *sandboxv1beta1.Sandbox, now time.Time) {
	if sb.Spec.IdlePolicy == nil {
		return
	}
	r.idle, r.idleReason, r.lastActive = true, none, none
	r.mode = string(cmp.Or(sb.Spec.OperatingMode, sandboxv1beta1.SandboxOperatingModeRunning))
	if sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended &&
		sb.Annotations[sandboxv1beta1.SuspendedByAnnotation] == sandboxv1beta1.SuspendedByIdle {
		r.mode += " (idle)"
	}
	var last time.Time
	if st := sb.Status.Idle; st != nil {
		r.idleReason = cmp.Or(st.Reason, none)
		if st.LastActiveTime != nil {
			last = st.LastActiveTime.Time
		}
	}
	if t, err := time.Parse(time.RFC3339, sb.Annotations[sandboxv1beta1.LastActivityAnnotation]); err == nil && t.After(last) {
		last = t
	}
	if !last.IsZero() {
		r.lastActive = duration.HumanDuration(now.Sub(last)) + " ago"
	}
}

// withIdle adds the MODE, IDLE and LAST ACTIVE columns to cols when a row has an idle policy, so
// tables without one stay as they were.
func withIdle(cols []column, rs []row) []column {
	for _, r := range rs {
		if r.idle {
			return append(slices.Clone(cols), colMode, colIdle, colLastActive)
		}
	}
	return cols
}

// claimOf is the name of the claim that controls sb, or "".
func claimOf(sb *sandboxv1beta1.Sandbox) string {
	if ref := metav1.GetControllerOf(sb); ref != nil && ref.Kind == "SandboxClaim" {
		return ref.Name
	}
	return ""
}

// sandboxSource is where an unclaimed sandbox comes from: its warm pool or its template.
func sandboxSource(sb *sandboxv1beta1.Sandbox) string {
	if ref := metav1.GetControllerOf(sb); ref != nil && ref.Kind == "SandboxWarmPool" {
		return "pool/" + ref.Name
	}
	if t := sb.Annotations[sandboxv1beta1.SandboxTemplateRefAnnotation]; t != "" {
		return "template/" + t
	}
	return none
}

// claimSource is the claim's --pool or --template.
func claimSource(c *extv1beta1.SandboxClaim) string {
	switch {
	case c.Spec.WarmPoolRef != nil:
		return "pool/" + c.Spec.WarmPoolRef.Name
	case c.Spec.SandboxTemplateRef != nil:
		return "template/" + c.Spec.SandboxTemplateRef.Name
	}
	return none
}

func claimExpiry(c *extv1beta1.SandboxClaim) *metav1.Time {
	if c.Spec.Lifecycle == nil {
		return nil
	}
	return c.Spec.Lifecycle.ShutdownTime
}

// readyText is "True", or the status with the reason: "False (SandboxSuspended)".
func readyText(c *metav1.Condition) string {
	switch {
	case c == nil:
		return "Unknown"
	case c.Status == metav1.ConditionTrue:
		return "True"
	case c.Reason == "":
		return string(c.Status)
	}
	return fmt.Sprintf("%s (%s)", c.Status, c.Reason)
}

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return none
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// expires is how long until t: "in 59m", "expired", or <none>.
func expires(t *metav1.Time, now time.Time) string {
	switch {
	case t == nil:
		return none
	case !t.After(now):
		return "expired"
	}
	return "in " + duration.HumanDuration(t.Sub(now))
}

// column is one column of a table: its header and how to get its cell from a row.
type column struct {
	header string
	cell   func(row) string
}

var (
	colNamespace = column{"NAMESPACE", func(r row) string { return r.namespace }}
	colName      = column{"NAME", func(r row) string { return r.sandbox }}
	colSandbox   = column{"SANDBOX", func(r row) string { return r.sandbox }}
	colClaim     = column{"CLAIM", func(r row) string { return r.claim }}
	colSource    = column{"POOL/TEMPLATE", func(r row) string { return r.source }}
	colReady     = column{"READY", func(r row) string { return r.ready }}
	colPodIP     = column{"POD IP", func(r row) string { return r.podIP }}
	colAge       = column{"AGE", func(r row) string { return r.age }}
	colExpires   = column{"EXPIRES", func(r row) string { return r.expires }}
	// The idle columns (see withIdle); <none> in the rows without an idle policy.
	colMode       = column{"MODE", func(r row) string { return idleCell(r, r.mode) }}
	colIdle       = column{"IDLE", func(r row) string { return idleCell(r, r.idleReason) }}
	colLastActive = column{"LAST ACTIVE", func(r row) string { return idleCell(r, r.lastActive) }}

	// lsColumns are kubox ls's and kubox get's.
	lsColumns = []column{colName, colClaim, colSource, colReady, colPodIP, colAge, colExpires}
	// claimColumns are kubox claim's.
	claimColumns = []column{colClaim, colSandbox, colSource, colReady, colAge}
)

func idleCell(r row, v string) string {
	if !r.idle {
		return none
	}
	return v
}

// printTable prints rs with cols, and a NAMESPACE column first when allNamespaces.
func printTable(w io.Writer, cols []column, rs []row, allNamespaces bool) error {
	if allNamespaces {
		cols = append([]column{colNamespace}, cols...)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.header
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rs {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = c.cell(r)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
