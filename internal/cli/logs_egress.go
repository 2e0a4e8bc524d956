package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/devenv"
)

// egressAuditMsg is the msg of kubox-egress's audit lines (docs/egress.md).
const egressAuditMsg = "Egress"

// egressLogs prints the audit lines kubox-egress wrote about the sandbox ns/name: from the file
// --egress-log names; else from every Pod of kubox-egress in o.egressNS (one Pod per replica, each
// serving some of the sandbox's connections), keeping only the lines whose sandbox is ns/name;
// else, when no such Pod runs, from the local node's log, where kubox dev runs it on the node.
func egressLogs(ctx context.Context, cs kubernetes.Interface, ns, name string, o *logsOptions, w, notes io.Writer) error {
	sandbox := ns + "/" + name
	if o.egressLog != "" {
		return egressLogFile(ctx, o.egressLog, o, sandbox, w)
	}
	pods, err := cs.CoreV1().Pods(o.egressNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + contract.EgressServiceName})
	if err != nil {
		return fmt.Errorf("%w (--egress reads kubox-egress's logs in namespace %s: set --egress-namespace where it runs)", apiError(err, "Pod", o.egressNS, ""), o.egressNS)
	}
	if len(pods.Items) == 0 {
		if local := localEgressLog(); local != "" {
			_, _ = fmt.Fprintf(notes, "no kubox-egress Pod in namespace %s: reading the local node's %s\n", o.egressNS, local)
			return egressLogFile(ctx, local, o, sandbox, w)
		}
		return fmt.Errorf("no kubox-egress Pod in namespace %s: set --egress-namespace where kubox-egress runs, or --egress-log to its log file", o.egressNS)
	}
	out := &lockedWriter{w: w}
	g, ctx := errgroup.WithContext(ctx)
	for _, p := range pods.Items {
		g.Go(func() error { return filterEgress(ctx, cs, &p, o, sandbox, out) })
	}
	return g.Wait()
}

// localEgressLog is the log of the local node's kubox-egress when it exists, else "".
var localEgressLog = func() string {
	path := devenv.NewLayout(devenv.DefaultStateDir()).LogFile(devenv.Egress)
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// egressLogFile prints the audit lines about sandbox in the log file at path: the last o.tail of
// them (all for -1), then, with o.follow, each new one until ctx ends.
func egressLogFile(ctx context.Context, path string, o *logsOptions, sandbox string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading kubox-egress's log: %w", err)
	}
	defer func() { _ = f.Close() }()
	r := bufio.NewReaderSize(f, 64<<10)
	var kept [][]byte
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' && isEgressLineOf(line[:len(line)-1], sandbox) {
			kept = append(kept, line)
			if o.tail >= 0 && int64(len(kept)) > o.tail {
				kept = kept[1:]
			}
		}
		if errors.Is(err, io.EOF) {
			// A partial last line is read again, whole, by the loop below.
			if _, serr := f.Seek(-int64(len(line)), io.SeekCurrent); serr != nil {
				return serr
			}
			break
		}
		if err != nil {
			return fmt.Errorf("reading kubox-egress's log %s: %w", path, err)
		}
	}
	for _, l := range kept {
		if _, err := w.Write(l); err != nil {
			return err
		}
	}
	if !o.follow {
		return nil
	}
	return followEgressLog(ctx, f, sandbox, w)
}

// followEgressLog prints the audit lines about sandbox appended to f, polling for them, until ctx
// ends.
func followEgressLog(ctx context.Context, f *os.File, sandbox string, w io.Writer) error {
	r := bufio.NewReaderSize(f, 64<<10)
	var partial []byte
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		line, err := r.ReadBytes('\n')
		partial = append(partial, line...)
		if err == nil {
			if isEgressLineOf(partial[:len(partial)-1], sandbox) {
				if _, werr := w.Write(partial); werr != nil {
					return werr
				}
			}
			partial = nil
			continue
		}
		if !errors.Is(err, io.EOF) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func filterEgress(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, o *logsOptions, sandbox string, w *lockedWriter) error {
	opts := &corev1.PodLogOptions{Follow: o.follow, Previous: o.previous}
	if o.tail >= 0 {
		opts.TailLines = &o.tail
	}
	rc, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("reading the logs of kubox-egress Pod %s in namespace %s: %w", p.Name, p.Namespace, err)
	}
	defer func() { _ = rc.Close() }()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if isEgressLineOf(sc.Bytes(), sandbox) {
			w.writeLine(sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("reading the logs of kubox-egress Pod %s: %w", p.Name, err)
	}
	return nil
}

// isEgressLineOf reports whether line is an audit line of kubox-egress about sandbox.
func isEgressLineOf(line []byte, sandbox string) bool {
	var l struct {
		Msg     string `json:"msg"`
		Sandbox string `json:"sandbox"`
	}
	return json.Unmarshal(line, &l) == nil && l.Msg == egressAuditMsg && l.Sandbox == sandbox
}

// lockedWriter writes whole lines from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) writeLine(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(append(append([]byte{}, b...), '\n'))
}
