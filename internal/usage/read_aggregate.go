package usage

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// By is what Aggregate groups records by.
type By string

// The groups of Aggregate. Every group but ByNamespace is within a namespace: a template, a
// principal (a label value) and a claim are names a namespace's tenant chose, and the same name
// in another namespace is another tenant's.
const (
	ByNamespace By = "namespace"
	ByTemplate  By = "template"
	ByPrincipal By = "principal"
	ByClaim     By = "claim"
	BySandbox   By = "sandbox"
)

// Bys are the groups, in the order help lists them.
var Bys = []By{ByNamespace, ByTemplate, ByPrincipal, ByClaim, BySandbox}

// Row is the sum of a group's records.
type Row struct {
	Namespace string `json:"namespace"`
	// Value is the group's template, principal, claim or sandbox name; "" for ByNamespace, and
	// for records that have no such value (a sandbox with no claim, no principal label).
	Value string `json:"value"`
	// UID is the sandbox's UID (BySandbox only): two sandboxes of one name are two rows.
	UID string `json:"uid,omitempty"`
	// Sandboxes is how many records (one per sandbox) the row adds up.
	Sandboxes int `json:"sandboxes"`
	// Figures are the sums of the records' Figures: time and requested resources.
	Figures
	// Measured sums the records that have measured figures; nil when none has.
	Measured *RowMeasured `json:"measured"`
}

// RowMeasured is the sum of the measured figures of a row's records that have them.
type RowMeasured struct {
	// Sandboxes is how many of the row's records had measured figures: when fewer than
	// Row.Sandboxes, the sums cover only those.
	Sandboxes        int     `json:"sandboxes"`
	CPUSeconds       float64 `json:"cpuSeconds"`
	MemoryGiBSeconds float64 `json:"memoryGiBSeconds"`
}

// ParseBy returns the By s names.
func ParseBy(s string) (By, error) {
	if b := By(s); slices.Contains(Bys, b) {
		return b, nil
	}
	names := make([]string, len(Bys))
	for i, b := range Bys {
		names[i] = string(b)
	}
	return "", fmt.Errorf("%q is not one of %s", s, strings.Join(names, ", "))
}

// Aggregate adds records up by group, one Row per group, ordered by namespace, value and UID.
// records are one per sandbox (Reader.Read's).
func Aggregate(records []Record, by By) ([]Row, error) {
	if _, err := ParseBy(string(by)); err != nil {
		return nil, err
	}
	type key struct{ namespace, value, uid string }
	rows := map[key]*Row{}
	for i := range records {
		r := &records[i]
		k := key{namespace: r.Namespace}
		switch by {
		case ByTemplate:
			k.value = r.Template
		case ByPrincipal:
			k.value = r.Principal
		case ByClaim:
			k.value = r.Claim
		case BySandbox:
			k.value, k.uid = r.Name, r.UID
		}
		row := rows[k]
		if row == nil {
			row = &Row{Namespace: k.namespace, Value: k.value, UID: k.uid}
			rows[k] = row
		}
		row.add(r)
	}
	out := make([]Row, 0, len(rows))
	for _, row := range rows {
		out = append(out, *row)
	}
	slices.SortFunc(out, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Value, b.Value), cmp.Compare(a.UID, b.UID))
	})
	return out, nil
}

func (row *Row) add(r *Record) {
	row.Sandboxes++
	row.RunningSeconds += r.RunningSeconds
	row.SuspendedSeconds += r.SuspendedSeconds
	row.Wakes += r.Wakes
	row.RequestedCPUCoreSeconds += r.RequestedCPUCoreSeconds
	row.RequestedMemoryGiBSeconds += r.RequestedMemoryGiBSeconds
	if m := r.Measured; m != nil {
		if row.Measured == nil {
			row.Measured = &RowMeasured{}
		}
		row.Measured.Sandboxes++
		row.Measured.CPUSeconds += m.CPUSeconds
		row.Measured.MemoryGiBSeconds += m.MemoryGiBSeconds
	}
}
