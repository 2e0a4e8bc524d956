package usage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/objstore"
)

// MaxReadObjectBytes bounds what Reader reads of one object: the S3 sink writes one record, a
// few hundred bytes, per object; a larger object is not one of them.
const MaxReadObjectBytes = 1 << 20

// MaxReadDays bounds how many of the sink's day folders one Read lists.
const MaxReadDays = 400

// Query selects records.
type Query struct {
	// Namespace, Template, Principal and Claim select the records with exactly these values;
	// "" matches any.
	Namespace, Template, Principal, Claim string
	// Since and Until select the records whose sandbox's life overlaps [Since, Until): it ended
	// at or after Since and started before Until. A record is selected whole: its figures are
	// totals over the sandbox's life and are not split over time.
	Since, Until time.Time
	// Ended selects instead the records whose sandbox ended in [Since, Until): each sandbox
	// falls in exactly one of a series of adjacent ranges, as billing periods need.
	Ended bool
	// Limit is how many sandboxes' records Read reads at most (those with the namespace,
	// template, principal and claim selected, in the day folders it lists); past it Read stops
	// and returns none (Result.Truncated), since a sum over some of them would be wrong. 0: no
	// limit.
	Limit int
}

// Matches says whether q selects r.
func (q Query) Matches(r *Record) bool { return q.selects(r) && q.inRange(r) }

// selects says whether r has the namespace, template, principal and claim q selects.
func (q Query) selects(r *Record) bool {
	return (q.Namespace == "" || r.Namespace == q.Namespace) && (q.Template == "" || r.Template == q.Template) &&
		(q.Principal == "" || r.Principal == q.Principal) && (q.Claim == "" || r.Claim == q.Claim)
}

// inRange says whether r's sandbox's life overlaps q's range (with q.Ended: ended in it).
func (q Query) inRange(r *Record) bool {
	if q.Ended {
		return !r.End.Before(q.Since) && r.End.Before(q.Until)
	}
	return !r.End.Before(q.Since) && r.Start.Before(q.Until)
}

// Reader reads the records the S3 sink wrote to a bucket under a prefix: the inverse of
// S3.Write, which names the objects (S3.ObjectName), so that the layout has one home.
type Reader struct {
	Client         *minio.Client
	Bucket, Prefix string
	// Now is the latest time a record can have ended at: Read lists the day folders up to it.
	Now func() time.Time
}

// NewReader returns the Reader of the bucket and prefix cfg names, its credentials read from
// their files.
func NewReader(cfg objstore.Config) (*Reader, error) {
	c, err := cfg.Client("the usage bucket")
	if err != nil {
		return nil, err
	}
	return &Reader{Client: c, Bucket: cfg.Bucket, Prefix: strings.Trim(cfg.Prefix, "/"), Now: time.Now}, nil
}

// Result is what Read found.
type Result struct {
	// Records match the query, one per sandbox (UID), ordered by namespace, end and UID.
	Records []Record
	// Truncated is true when more records matched than Query.Limit; Records is then empty.
	Truncated bool
	// Objects is how many objects were read.
	Objects int
	// Damaged names the objects that are not the sink's records ("key: why"); they are skipped.
	Damaged []string
}

// Read returns the records q selects. The sink dates each object by its record's end, so Read
// lists the day folders from Since's day to tomorrow's: a sandbox that started before Until may
// have ended since, and the controller's clock may be ahead of this one's. A sandbox whose record was written more than once (on different days) is
// counted once, with the record that ended last (its figures are totals), and is selected by
// that record's times only.
func (r *Reader) Read(ctx context.Context, q Query) (*Result, error) {
	if !q.Since.Before(q.Until) {
		return nil, fmt.Errorf("the time range is empty: %s is not before %s", q.Since.UTC().Format(time.RFC3339), q.Until.UTC().Format(time.RFC3339))
	}
	days, err := dayFolders(q.Since, r.Now().Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	res := &Result{}
	bySandbox := map[string]Record{}
	for _, d := range days {
		if err := r.readFolder(ctx, d, q, res, bySandbox); err != nil {
			return nil, err
		}
		if res.Truncated {
			return res, nil
		}
	}
	for _, rec := range bySandbox {
		if q.inRange(&rec) {
			res.Records = append(res.Records, rec)
		}
	}
	slices.SortFunc(res.Records, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), a.End.Compare(b.End), cmp.Compare(a.UID, b.UID))
	})
	return res, nil
}

// dayFolders are the sink's day folders (yyyy/mm/dd, UTC) from the day of since to that of last.
func dayFolders(since, last time.Time) ([]string, error) {
	from := since.UTC().Truncate(24 * time.Hour)
	if n := int(last.UTC().Sub(from)/(24*time.Hour)) + 1; n > MaxReadDays {
		return nil, fmt.Errorf("reading from %s means listing %d days of records, more than %d days: start later",
			since.UTC().Format(time.RFC3339), n, MaxReadDays)
	}
	var out []string
	for t := from; !t.After(last.UTC()); t = t.AddDate(0, 0, 1) {
		out = append(out, t.Format("2006/01/02"))
	}
	return out, nil
}

func (r *Reader) readFolder(ctx context.Context, day string, q Query, res *Result, bySandbox map[string]Record) error {
	prefix := day
	if q.Namespace != "" {
		prefix = path.Join(day, url.PathEscape(q.Namespace))
	}
	if r.Prefix != "" {
		prefix = path.Join(r.Prefix, prefix)
	}
	prefix += "/"
	ctx, cancel := context.WithCancel(ctx) // stops the listing if this returns before its end
	defer cancel()
	for obj := range r.Client.ListObjects(ctx, r.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return fmt.Errorf("listing %s in bucket %s: %w", prefix, r.Bucket, obj.Err)
		}
		if !strings.HasSuffix(obj.Key, ".ndjson") {
			continue
		}
		rec, err := r.readObject(ctx, obj.Key, res)
		if err != nil {
			return err
		}
		if rec == nil || !q.selects(rec) {
			continue
		}
		key := rec.Namespace + "/" + rec.UID
		if prev, ok := bySandbox[key]; !ok || prev.End.Before(rec.End) {
			bySandbox[key] = *rec
		}
		if q.Limit > 0 && len(bySandbox) > q.Limit {
			res.Truncated = true
			return nil
		}
	}
	return nil
}

// readObject reads the record of the object key; nil, with the object named in res.Damaged,
// when it is not one of the sink's.
func (r *Reader) readObject(ctx context.Context, key string, res *Result) (*Record, error) {
	o, err := r.Client.GetObject(ctx, r.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading %s in bucket %s: %w", key, r.Bucket, err)
	}
	defer func() { _ = o.Close() }()
	b, err := io.ReadAll(io.LimitReader(o, MaxReadObjectBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s in bucket %s: %w", key, r.Bucket, err)
	}
	res.Objects++
	if len(b) > MaxReadObjectBytes {
		res.Damaged = append(res.Damaged, fmt.Sprintf("%s: larger than %d MiB, not a record of the usage sink", key, MaxReadObjectBytes>>20))
		return nil, nil
	}
	rec, err := decodeObject(r.Prefix, key, b)
	if err != nil {
		res.Damaged = append(res.Damaged, key+": "+err.Error())
		return nil, nil
	}
	return &rec, nil
}

// decodeObject decodes the object key of the sink writing under prefix. It accepts only what
// the sink writes: one line, one kubox.dev/usage/v1 record, whose object name (S3.ObjectName)
// is key; so a record cannot be counted under a namespace, a day or a sandbox it does not name.
func decodeObject(prefix, key string, body []byte) (Record, error) {
	line, rest, _ := bytes.Cut(bytes.TrimSpace(body), []byte("\n"))
	if len(line) == 0 {
		return Record{}, errors.New("empty, not a usage record")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return Record{}, errors.New("more than one line; the usage sink writes one record per object")
	}
	var rec Record
	if err := json.Unmarshal(line, &rec); err != nil {
		return Record{}, fmt.Errorf("not a usage record: %w", err)
	}
	if rec.Schema != SchemaVersion {
		return Record{}, fmt.Errorf("schema %q, not %s", rec.Schema, SchemaVersion)
	}
	if want := (&S3{prefix: strings.Trim(prefix, "/")}).ObjectName(&rec); want != key {
		return Record{}, fmt.Errorf("the record of sandbox %s/%s (uid %s) is named %s, which is not this object's name: not written by the usage sink",
			rec.Namespace, rec.Name, rec.UID, want)
	}
	return rec, nil
}
