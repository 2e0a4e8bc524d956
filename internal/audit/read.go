package audit

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/internal/objstore"
)

// MaxReadObjectBytes bounds what Reader reads of one object: the S3 sink's batches are far
// smaller (QueueConfig.BatchSize records); a larger object is not one of them.
const MaxReadObjectBytes = 256 << 20

// MaxReadHours bounds the time range of one Query: the sink keeps a folder per hour, each listed
// on its own.
const MaxReadHours = 31 * 24

// Query selects records.
type Query struct {
	// Namespace, Sandbox and Claim select the records of a sandbox or a claim; "" matches any.
	Namespace, Sandbox, Claim string
	// From and To bound Record.Time: From <= Time < To.
	From, To time.Time
	// Limit is how many records Read returns at most, the latest ones; 0: no limit.
	Limit int
}

// Reader reads the records the S3 sink wrote to a bucket under a prefix (S3Config): the
// inverse of S3.Write, so that the object layout has one home.
type Reader struct {
	Client         *minio.Client
	Bucket, Prefix string
}

// NewReader returns the Reader of the bucket and prefix cfg names, its credentials read from
// their files.
func NewReader(cfg objstore.Config) (*Reader, error) {
	c, err := cfg.Client("the audit bucket")
	if err != nil {
		return nil, err
	}
	return &Reader{Client: c, Bucket: cfg.Bucket, Prefix: cfg.Prefix}, nil
}

// Result is what Read found.
type Result struct {
	// Records match the query, in time order.
	Records []Record
	// Truncated is true when more records matched than Query.Limit: the earliest were left out.
	Truncated bool
	// Objects is how many objects were read.
	Objects int
	// Damaged names the lines that were not records (object:line and why); they are skipped.
	Damaged []string
}

// Read returns the records q selects. The sink names each object for the time its batch was
// written, a little after its records' times, so Read also looks at the hour after q.To.
func (r Reader) Read(ctx context.Context, q Query) (*Result, error) {
	if !q.From.Before(q.To) {
		return nil, fmt.Errorf("the time range is empty: %s is not before %s", q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339))
	}
	hours := hourFolders(q.From, q.To.Add(time.Hour))
	if len(hours) > MaxReadHours+1 {
		return nil, fmt.Errorf("the time range %s to %s is more than %d days: read it in parts", q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339), MaxReadHours/24)
	}
	res := &Result{}
	for _, h := range hours {
		if err := r.readFolder(ctx, h, q, res); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(res.Records, func(a, b Record) int { return cmp.Compare(a.Time.UnixNano(), b.Time.UnixNano()) })
	if q.Limit > 0 && len(res.Records) > q.Limit {
		res.Records, res.Truncated = res.Records[len(res.Records)-q.Limit:], true
	}
	return res, nil
}

// hourFolders are the sink's hour folders (yyyy/mm/dd/hh) from the hour of from to that of to.
func hourFolders(from, to time.Time) []string {
	var out []string
	for t := from.UTC().Truncate(time.Hour); !t.After(to.UTC()); t = t.Add(time.Hour) {
		out = append(out, t.Format(hourLayout))
		if len(out) > MaxReadHours+1 {
			break
		}
	}
	return out
}

func (r Reader) readFolder(ctx context.Context, hour string, q Query, res *Result) error {
	prefix := hour + "/"
	if p := strings.Trim(r.Prefix, "/"); p != "" {
		prefix = path.Join(p, hour) + "/"
	}
	for obj := range r.Client.ListObjects(ctx, r.Bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if obj.Err != nil {
			return fmt.Errorf("listing %s in bucket %s: %w", prefix, r.Bucket, obj.Err)
		}
		if !strings.HasSuffix(obj.Key, ".ndjson") {
			continue
		}
		if err := r.readObject(ctx, obj.Key, q, res); err != nil {
			return err
		}
	}
	return nil
}

func (r Reader) readObject(ctx context.Context, key string, q Query, res *Result) error {
	o, err := r.Client.GetObject(ctx, r.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return fmt.Errorf("reading %s in bucket %s: %w", key, r.Bucket, err)
	}
	defer func() { _ = o.Close() }()
	b, err := io.ReadAll(io.LimitReader(o, MaxReadObjectBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s in bucket %s: %w", key, r.Bucket, err)
	}
	res.Objects++
	if len(b) > MaxReadObjectBytes {
		res.Damaged = append(res.Damaged, fmt.Sprintf("%s: larger than %d MiB, not a batch of the audit sink; skipped", key, MaxReadObjectBytes>>20))
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			res.Damaged = append(res.Damaged, fmt.Sprintf("%s:%d: %v", key, line, err))
			continue
		}
		if q.matches(&rec) {
			res.Records = append(res.Records, rec)
		}
	}
	return nil
}

func (q Query) matches(r *Record) bool {
	return (q.Namespace == "" || r.Namespace == q.Namespace) && (q.Sandbox == "" || r.Sandbox == q.Sandbox) &&
		(q.Claim == "" || r.Claim == q.Claim) && !r.Time.Before(q.From) && r.Time.Before(q.To)
}
