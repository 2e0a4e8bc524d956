package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubox-dev/kubox/api/contract"
)

// egressAuditMsg is the msg of kubox-egress's audit lines (docs/egress.md).
const egressAuditMsg = "Egress"

// egressLogs prints the audit lines kubox-egress wrote about the sandbox ns/name: every Pod of
// kubox-egress in egressNS (one Pod per replica, each serving some of the sandbox's
// connections) is read, and only the lines whose sandbox is ns/name are kept.
func egressLogs(ctx context.Context, cs kubernetes.Interface, egressNS, ns, name string, o *logsOptions, w io.Writer) error {
	pods, err := cs.CoreV1().Pods(egressNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + contract.EgressServiceName})
	if err != nil {
		return fmt.Errorf("%w (--egress reads kubox-egress's logs in namespace %s: set --egress-namespace where it runs)", apiError(err, "Pod", egressNS, ""), egressNS)
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no kubox-egress Pod in namespace %s: set --egress-namespace where kubox-egress runs", egressNS)
	}
	out := &lockedWriter{w: w}
	g, ctx := errgroup.WithContext(ctx)
	for _, p := range pods.Items {
		g.Go(func() error { return filterEgress(ctx, cs, &p, o, ns+"/"+name, out) })
	}
	return g.Wait()
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
