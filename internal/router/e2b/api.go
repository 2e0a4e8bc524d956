package e2b

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
	"github.com/kubox-dev/kubox/internal/router/wake"
)

// E2B's defaults: a sandbox lives 15 s unless the request says otherwise (the SDKs send 300).
const (
	e2bDefaultTimeout = 15 * time.Second
	// e2bClientID fills the deprecated clientID E2B's schemas still require.
	e2bClientID = "kubox"
	// e2bIDBytes random bytes name a sandbox (base32: 16 characters).
	e2bIDBytes = 10
	// e2bMaxBody bounds a control API request's JSON.
	e2bMaxBody = 1 << 20
)

// e2bNewSandbox is the body of POST /sandboxes and /v2/sandboxes (E2B's NewSandbox). AutoPause,
// AutoPauseMemory and AutoResume are E2B's lifecycle (lifecycle.go). The fields after EnvVars
// are E2B features kubox does not serve per sandbox: a request that sets one is refused
// (unsupportedE2BOptions) rather than given a sandbox without what it asked for.
type e2bNewSandbox struct {
	TemplateID      string            `json:"templateID"`
	Timeout         *int64            `json:"timeout,omitempty"`
	AutoPause       bool              `json:"autoPause,omitempty"`
	AutoPauseMemory *bool             `json:"autoPauseMemory,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	EnvVars         map[string]string `json:"envVars,omitempty"`
	AutoResume      *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume,omitempty"`

	AllowInternetAccess *bool             `json:"allow_internet_access,omitempty"`
	Network             json.RawMessage   `json:"network,omitempty"`
	VolumeMounts        []json.RawMessage `json:"volumeMounts,omitempty"`
	MCP                 json.RawMessage   `json:"mcp,omitempty"`
	IAM                 *struct {
		Tokens map[string]json.RawMessage `json:"tokens,omitempty"`
	} `json:"iam,omitempty"`
}

// unsupportedE2BOptions names the first option of req kubox cannot honour, and what to use.
func unsupportedE2BOptions(req *e2bNewSandbox) *httperr.Error {
	switch {
	case req.AllowInternetAccess != nil && !*req.AllowInternetAccess:
		return httperr.Errorf(http.StatusBadRequest, "allow_internet_access=false is not supported per sandbox: a sandbox's egress is its SandboxTemplate's network policy; create from a template without egress")
	case len(req.Network) > 0 && string(req.Network) != "null":
		return httperr.Errorf(http.StatusBadRequest, "network rules per sandbox are not supported: state egress on the SandboxTemplate (docs/egress.md)")
	case len(req.VolumeMounts) > 0:
		return httperr.Errorf(http.StatusBadRequest, "E2B volumes are not supported: give the SandboxTemplate volumeClaimTemplates")
	case len(req.MCP) > 0 && string(req.MCP) != "null":
		return httperr.Errorf(http.StatusBadRequest, "an MCP gateway in the sandbox is not supported: run `kubox mcp` (docs/mcp.md)")
	case req.IAM != nil && len(req.IAM.Tokens) > 0:
		return httperr.Errorf(http.StatusBadRequest, "IAM tokens are not supported: give the sandbox credentials through the claim's secret files")
	}
	return nil
}

// e2bSandbox is E2B's Sandbox: what create, resume and connect answer.
type e2bSandbox struct {
	TemplateID      string `json:"templateID"`
	SandboxID       string `json:"sandboxID"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken"`
	// TrafficAccessToken is the same claim token, which @e2b/code-interpreter sends as
	// E2B-Traffic-Access-Token on the calls it sends no X-Access-Token with (its context calls).
	TrafficAccessToken string `json:"trafficAccessToken"`
	Domain             string `json:"domain"`
}

// e2bDetail is E2B's SandboxDetail and ListedSandbox (which lacks the token and domain).
type e2bDetail struct {
	TemplateID      string            `json:"templateID"`
	SandboxID       string            `json:"sandboxID"`
	ClientID        string            `json:"clientID"`
	StartedAt       time.Time         `json:"startedAt"`
	EndAt           time.Time         `json:"endAt"`
	EnvdVersion     string            `json:"envdVersion"`
	EnvdAccessToken string            `json:"envdAccessToken,omitempty"`
	Domain          string            `json:"domain,omitempty"`
	CPUCount        int               `json:"cpuCount"`
	MemoryMB        int               `json:"memoryMB"`
	DiskSizeMB      int               `json:"diskSizeMB"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	State           string            `json:"state"`
	// Lifecycle is E2B's SandboxLifecycle: onTimeout kill or pause (lifecycle.go).
	Lifecycle *e2bLifecycleInfo `json:"lifecycle,omitempty"`
}

// E2B's sandbox states.
const (
	e2bRunning = "running"
	e2bPaused  = "paused"
)

// e2bTimeout is the body of /timeout, /connect and /resume ({"timeout": seconds}) and of
// /refreshes ({"duration": seconds}).
type e2bTimeout struct {
	Timeout  *int64 `json:"timeout,omitempty"`
	Duration *int64 `json:"duration,omitempty"`
}

// e2bHandler is a control API operation, run as caller.
type e2bHandler func(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error

// newMux routes E2B's control API paths.
func (a *API) newMux() *http.ServeMux {
	mux := http.NewServeMux()
	for pattern, h := range map[string]e2bHandler{
		"POST /sandboxes":                      a.e2bCreate,
		"POST /v2/sandboxes":                   a.e2bCreate,
		"GET /sandboxes":                       a.e2bList,
		"GET /v2/sandboxes":                    a.e2bList,
		"GET /sandboxes/{id}":                  a.e2bGet,
		"DELETE /sandboxes/{id}":               a.e2bKill,
		"POST /sandboxes/{id}/timeout":         a.e2bSetTimeout,
		"POST /sandboxes/{id}/refreshes":       a.e2bSetTimeout,
		"POST /sandboxes/{id}/pause":           a.e2bPause,
		"POST /sandboxes/{id}/resume":          a.e2bResume,
		"POST /sandboxes/{id}/connect":         a.e2bConnect,
		"POST /v2/sandboxes/{id}/connect":      a.e2bConnect,
		"POST /sandboxes/{id}/fork":            a.e2bFork,
		"POST /sandboxes/{id}/snapshots":       a.e2bCreateSnapshot,
		"GET /snapshots":                       a.e2bListSnapshots,
		"GET /health":                          nil,
		"GET /sandboxes/{id}/logs":             a.e2bUnsupported,
		"GET /v2/sandboxes/{id}/logs":          a.e2bUnsupported,
		"GET /sandboxes/{id}/metrics":          a.e2bMetrics,
		"GET /sandboxes/metrics":               a.e2bMetricsList,
		"POST /v2/sandboxes/{id}/snapshots":    a.e2bCreateSnapshot,
		"POST /sandboxes/{id}/network":         a.e2bUnsupported,
		"PUT /sandboxes/{id}/network":          a.e2bUnsupported,
		"POST /v3/templates":                   a.e2bUnsupported,
		"POST /v2/templates":                   a.e2bUnsupported,
		"GET /templates":                       a.e2bUnsupported,
		"GET /templates/{id}":                  a.e2bUnsupported,
		"POST /templates/{id}":                 a.e2bUnsupported,
		"DELETE /templates/{id}":               a.e2bDeleteTemplate,
		"GET /templates/{id}/builds/{buildID}": a.e2bUnsupported,
	} {
		if h == nil {
			mux.HandleFunc(pattern, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
			continue
		}
		mux.HandleFunc(pattern, a.e2bServe(h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeE2BError(w, httperr.Errorf(http.StatusNotFound, "kubox's E2B API has no %s %s", r.Method, httperr.Clip(r.URL.Path)))
	})
	return mux
}

// ServeHTTP serves E2B's control API (the host "api.{Config.Domain}").
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// e2bServe authenticates the caller, then runs h with the caller's token.
func (a *API) e2bServe(h e2bHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.deps.Synced() {
			writeE2BError(w, httperr.Errorf(http.StatusServiceUnavailable, "the router is still loading SandboxClaims from the Kubernetes API; retry shortly"))
			return
		}
		c, herr := a.authenticateE2B(r.Context(), r)
		a.recordE2BDecision(herr)
		if herr == nil {
			a.deps.Observe(r, c.user.Name, c.namespace, r.PathValue("id"))
			herr = h(withCaller(r.Context(), c), w, r, c)
		}
		if herr != nil {
			writeE2BError(w, herr)
		}
	}
}

func (a *API) e2bUnsupported(_ context.Context, _ http.ResponseWriter, r *http.Request, _ *e2bCaller) *httperr.Error {
	return httperr.Errorf(http.StatusNotImplemented, "kubox does not serve %s %s of E2B's API: templates are SandboxTemplates and "+
		"SandboxWarmPools (managed with kubectl), logs are Kubernetes' (kubectl logs) (docs/e2b.md)", r.Method, httperr.Clip(r.URL.Path))
}

// e2bCreate creates a SandboxClaim from the warm pool (else the template) named templateID and
// answers once it is Ready, with a claim token as envd's access token.
func (a *API) e2bCreate(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	var req e2bNewSandbox
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	if req.TemplateID == "" {
		return httperr.Errorf(http.StatusBadRequest, "templateID is required: the name of a SandboxWarmPool or SandboxTemplate in %s", c.namespace)
	}
	if herr := unsupportedE2BOptions(&req); herr != nil {
		return herr
	}
	pause, herr := e2bPauseOnTimeout(&req)
	if herr != nil {
		return herr
	}
	timeout, herr := e2bSeconds(req.Timeout, e2bDefaultTimeout)
	if herr != nil {
		return herr
	}
	claim := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: newE2BSandboxID()}}
	if herr := a.e2bSource(ctx, claim, req.TemplateID); herr != nil {
		return herr
	}
	if herr := setE2BMetadata(claim, req.Metadata); herr != nil {
		return herr
	}
	for k, v := range req.EnvVars {
		claim.Spec.Env = append(claim.Spec.Env, extv1beta1.EnvVar{Name: k, Value: v})
	}
	claim.Spec.Lifecycle = e2bLifecycle(a.deps.Now(), timeout)
	if pause != nil {
		setPauseOnTimeout(claim, timeout, pause)
	}
	ready, herr := a.createE2BClaim(ctx, c, claim)
	if herr != nil {
		return herr
	}
	if pause != nil {
		if herr := a.armPauseOnTimeout(ctx, c, ready); herr != nil {
			a.dropE2BClaim(ctx, claim)
			return herr
		}
	}
	return a.writeE2BSandbox(w, r, c, http.StatusCreated, claimTemplate(claim), ready, claimShutdown(claim))
}

// createE2BClaim creates claim as the caller and waits until its sandbox is Ready. The answer
// will carry an envd access token, so a caller who may not connect to the claim is refused
// before anything is created; and E2B's create either answers a sandbox or leaves none behind,
// so a claim that does not become Ready is deleted.
func (a *API) createE2BClaim(ctx context.Context, c *e2bCaller, claim *extv1beta1.SandboxClaim) (*extv1beta1.SandboxClaim, *httperr.Error) {
	if herr := a.deps.AuthorizeMint(ctx, c.user, claim.Namespace, claim.Name); herr != nil {
		return nil, herr
	}
	if err := a.kube.Create(ctx, claim); err != nil {
		return nil, e2bKubeError(err, "creating a SandboxClaim in "+c.namespace)
	}
	ready, herr := a.waitE2BReady(ctx, claim, 0)
	if herr != nil {
		a.dropE2BClaim(ctx, claim)
		return nil, herr
	}
	return ready, nil
}

// dropE2BClaim deletes a claim an E2B call created but did not answer.
func (a *API) dropE2BClaim(ctx context.Context, claim *extv1beta1.SandboxClaim) {
	if err := a.kube.Delete(context.WithoutCancel(ctx), claim, preconditionUID(claim)); err != nil && !apierrors.IsNotFound(err) {
		a.deps.Log.Warn("Deleting the claim of a failed E2B create failed; its timeout deletes it", "claim", claim.Name, "namespace", claim.Namespace, "error", err)
	}
}

// e2bSource points claim at the warm pool templateID, else at the template templateID (cold).
func (a *API) e2bSource(ctx context.Context, claim *extv1beta1.SandboxClaim, templateID string) *httperr.Error {
	if len(validation.IsDNS1123Subdomain(templateID)) > 0 {
		return httperr.Errorf(http.StatusBadRequest, "templateID %q is not a SandboxWarmPool or SandboxTemplate name", httperr.Clip(templateID))
	}
	key := objectKey(claim.Namespace, templateID)
	err := a.kube.Get(ctx, key, &extv1beta1.SandboxWarmPool{})
	if err == nil {
		claim.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: templateID}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return e2bKubeError(err, "reading SandboxWarmPool "+templateID)
	}
	if err := a.kube.Get(ctx, key, &extv1beta1.SandboxTemplate{}); err != nil {
		if apierrors.IsNotFound(err) {
			if found, herr := a.e2bSnapshotSource(ctx, claim, templateID); found {
				return herr // Sandbox.create of a snapshot's ID (snapshots.go)
			}
			return httperr.Errorf(http.StatusNotFound, "template %q not found: %s has no SandboxWarmPool, SandboxTemplate or SandboxSnapshot of that name", templateID, claim.Namespace)
		}
		return e2bKubeError(err, "reading SandboxTemplate "+templateID)
	}
	claim.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: templateID}
	return nil
}

// setE2BMetadata keeps E2B's metadata on the claim as one JSON annotation (free-text values,
// which labels cannot hold).
func setE2BMetadata(claim *extv1beta1.SandboxClaim, md map[string]string) *httperr.Error {
	if len(md) == 0 {
		return nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return httperr.Errorf(http.StatusBadRequest, "metadata: %v", err)
	}
	if len(b) > 64<<10 {
		return httperr.Errorf(http.StatusBadRequest, "metadata has %d bytes of JSON; at most 65536", len(b))
	}
	claim.Annotations = map[string]string{contract.E2BMetadataAnnotation: string(b)}
	return nil
}

func e2bMetadata(claim *extv1beta1.SandboxClaim) map[string]string {
	var md map[string]string
	_ = json.Unmarshal([]byte(claim.Annotations[contract.E2BMetadataAnnotation]), &md)
	return md
}

// e2bLifecycle makes the claim expire, and be deleted with its sandbox, timeout from now: an
// E2B sandbox is killed when its timeout passes.
func e2bLifecycle(now time.Time, timeout time.Duration) *extv1beta1.ClaimLifecycle {
	t := metav1.NewTime(now.Add(timeout).Truncate(time.Second))
	return &extv1beta1.ClaimLifecycle{ShutdownTime: &t, ShutdownPolicy: extv1beta1.ClaimShutdownPolicyDelete}
}

// e2bSeconds reads a timeout in seconds; nil: def.
func e2bSeconds(s *int64, def time.Duration) (time.Duration, *httperr.Error) {
	switch {
	case s == nil:
		return def, nil
	case *s < 0 || *s > int64(365*24*time.Hour/time.Second):
		return 0, httperr.Errorf(http.StatusBadRequest, "timeout %d is not a number of seconds from 0 to a year", *s)
	}
	return time.Duration(*s) * time.Second, nil
}

func newE2BSandboxID() string {
	b := make([]byte, e2bIDBytes)
	_, _ = rand.Read(b)
	return "e2b-" + lowerBase32(b)
}

func lowerBase32(b []byte) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	out := make([]byte, 0, len(b)*8/5+1)
	var acc, bits uint
	for _, c := range b {
		acc, bits = acc<<8|uint(c), bits+8
		for bits >= 5 {
			bits -= 5
			out = append(out, alphabet[(acc>>bits)&31])
		}
	}
	return string(out)
}

// e2bNextTokenHeader carries the token of a list's next page; the SDKs send it back as nextToken.
const e2bNextTokenHeader = "X-Next-Token"

// e2bList lists the caller's sandboxes: the namespace's claims, with their state, filtered by
// the query's metadata (k=v&...) and state (running, paused).
func (a *API) e2bList(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	list := &extv1beta1.SandboxClaimList{}
	if err := a.kube.List(ctx, list, inNamespace(c.namespace)); err != nil {
		return e2bKubeError(err, "listing SandboxClaims in "+c.namespace)
	}
	filter, herr := parseE2BListFilter(r)
	if herr != nil {
		return herr
	}
	out := []e2bDetail{}
	for i := range list.Items {
		cl := &list.Items[i]
		if cl.DeletionTimestamp != nil {
			continue
		}
		d := a.e2bDetailOf(ctx, cl)
		if filter.match(d) {
			out = append(out, d)
		}
	}
	page, next := filter.page(out)
	if next != "" {
		w.Header().Set(e2bNextTokenHeader, next)
	}
	httperr.WriteJSON(w, http.StatusOK, page)
	return nil
}

// e2bGet describes one sandbox, with a new envd access token when the caller may connect to it.
func (a *API) e2bGet(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	cl, herr := a.e2bClaim(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	d := a.e2bDetailOf(ctx, cl)
	tok, herr := a.e2bAccessToken(ctx, c, cl.Namespace, cl.Name, claimShutdown(cl))
	switch {
	case herr == nil:
		d.EnvdAccessToken = tok
	case herr.Code != http.StatusForbidden:
		return herr
	}
	// A caller who may read the claim but not connect to it gets its details without a token.
	d.Domain = sandboxDomain(a.cfg.Domain, r)
	httperr.WriteJSON(w, http.StatusOK, d)
	return nil
}

// e2bKill deletes the claim, and its sandbox with it, and answers once the router's cache no
// longer has the claim: from then on its envd access tokens are refused, as a killed E2B
// sandbox's are.
func (a *API) e2bKill(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	cl, herr := a.e2bClaim(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	if err := a.kube.Delete(ctx, cl, preconditionUID(cl)); err != nil {
		return e2bKubeError(err, "deleting SandboxClaim "+cl.Name)
	}
	if herr := a.waitE2BGone(ctx, cl); herr != nil {
		return herr
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// e2bSetTimeout sets the claim's expiry to the body's timeout (or refresh duration) from now.
func (a *API) e2bSetTimeout(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	var req e2bTimeout
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	s := req.Timeout
	if s == nil {
		s = req.Duration
	}
	if s == nil {
		return httperr.Errorf(http.StatusBadRequest, "the body needs a timeout in seconds: {\"timeout\": 300}")
	}
	timeout, herr := e2bSeconds(s, 0)
	if herr != nil {
		return herr
	}
	cl, herr := a.e2bClaim(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	if _, herr := a.patchE2BTimeout(ctx, c, cl, timeout); herr != nil {
		return herr
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// patchE2BTimeout sets the claim's shutdownTime timeout from now, and returns the lifecycle set;
// of a claim that pauses at its timeout, its sandbox's suspendAfter (setPauseTimeout), and no
// shutdownTime.
func (a *API) patchE2BTimeout(ctx context.Context, c *e2bCaller, cl *extv1beta1.SandboxClaim, timeout time.Duration) (*extv1beta1.ClaimLifecycle, *httperr.Error) {
	if pausesOnTimeout(cl) {
		return &extv1beta1.ClaimLifecycle{}, a.setPauseTimeout(ctx, c, cl, timeout)
	}
	lc := e2bLifecycle(a.deps.Now(), timeout)
	if err := wake.SetClaimShutdown(ctx, a.kube, cl, lc); err != nil {
		return nil, e2bKubeError(err, "setting the timeout of SandboxClaim "+cl.Name)
	}
	return lc, nil
}

// waitE2BSuspended waits until the controller has acted on generation gen of sb (its
// Suspended patch) and its Pod is gone: E2B's pause answers once the sandbox is paused, so a
// connect right after it resumes a stopped sandbox, never one still shutting down.
func (a *API) waitE2BSuspended(ctx context.Context, sb *sandboxv1beta1.Sandbox, gen int64) *httperr.Error {
	return a.awaitE2B(ctx, func(ctx context.Context) (bool, *httperr.Error) {
		got, _ := a.deps.Sandbox(ctx, sb.Namespace, sb.Name)
		if got == nil || got.UID != sb.UID {
			return false, httperr.Errorf(http.StatusNotFound, "sandbox %s was deleted while pausing", sb.Name)
		}
		if got.Generation < gen {
			return false, nil
		}
		done, terminal := sandboxv1beta1.SandboxSuspension(got)
		if terminal != "" {
			return false, neverE2B(got.Namespace, got.Name, "paused", meta.FindStatusCondition(got.Status.Conditions, sandboxv1beta1.SandboxConditionReady))
		}
		return done, nil
	}, func() *httperr.Error {
		return httperr.Errorf(http.StatusGatewayTimeout, "sandbox %s was not paused within %s; it goes on pausing", sb.Name, a.cfg.WakeTimeout)
	}, objectKey(sb.Namespace, sb.Name))
}

// awaitE2B runs check on the router's cache now and whenever the cache changes one of the
// objects keys names (wake.Events), until it is done or fails, for at most --wake-timeout; then
// it answers timedOut's error.
func (a *API) awaitE2B(ctx context.Context, check func(context.Context) (bool, *httperr.Error), timedOut func() *httperr.Error,
	keys ...client.ObjectKey) *httperr.Error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.WakeTimeout)
	defer cancel()
	var herr *httperr.Error
	if !a.deps.Events.Await(ctx, func(ctx context.Context) bool {
		var done bool
		done, herr = check(ctx)
		return done || herr != nil
	}, keys...) {
		return timedOut()
	}
	return herr
}

// e2bResume resumes a paused sandbox (409 when it runs), sets its timeout, and answers once it
// is Ready.
func (a *API) e2bResume(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	return a.e2bWake(ctx, w, r, c, false)
}

// e2bConnect is resume that also takes a running sandbox (200) and extends its timeout.
func (a *API) e2bConnect(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	return a.e2bWake(ctx, w, r, c, true)
}

func (a *API) e2bWake(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller, running bool) *httperr.Error {
	var req e2bTimeout
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	timeout, herr := e2bSeconds(req.Timeout, e2bDefaultTimeout)
	if herr != nil {
		return herr
	}
	cl, sb, herr := a.e2bClaimSandbox(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	paused := sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended
	if !paused && !running {
		return httperr.Errorf(http.StatusConflict, "sandbox %s is already running", cl.Name)
	}
	if herr := a.deps.AuthorizeMint(ctx, c.user, cl.Namespace, cl.Name); herr != nil {
		return herr // before anything changes: the answer carries an envd access token
	}
	lc := cl.Spec.Lifecycle
	// A paused sandbox that is killed at its timeout gets one (E2B's default without a body); one
	// that pauses at its timeout keeps its own unless the body gives one.
	if (paused && !pausesOnTimeout(cl)) || !keepsLongerTimeout(cl, req.Timeout, a.deps.Now().Add(timeout)) {
		if lc, herr = a.patchE2BTimeout(ctx, c, cl, timeout); herr != nil {
			return herr
		}
	}
	if lc == nil {
		lc = &extv1beta1.ClaimLifecycle{}
	}
	code, gen := http.StatusOK, int64(0)
	if paused {
		code = http.StatusCreated
		if gen, herr = a.setE2BMode(ctx, sb, sandboxv1beta1.SandboxOperatingModeRunning); herr != nil {
			return herr
		}
	}
	ready, herr := a.waitE2BReady(ctx, cl, gen)
	if herr != nil {
		return herr
	}
	return a.writeE2BSandbox(w, r, c, code, claimTemplate(cl), ready, lc.ShutdownTime)
}

// keepsLongerTimeout reports whether connect leaves a running sandbox's timeout as it is: E2B's
// connect updates it only when the new one is later, and keeps it when none is given (the SDKs'
// Sandbox.connect(id) sends none). A sandbox that pauses at its timeout keeps it without one.
func keepsLongerTimeout(cl *extv1beta1.SandboxClaim, given *int64, newEnd time.Time) bool {
	if given == nil {
		return true
	}
	end := claimShutdown(cl)
	return end != nil && !end.Time.Before(newEnd)
}

// setE2BMode patches the sandbox's operatingMode as the caller, guarded by its UID, and returns
// the generation that patch made.
func (a *API) setE2BMode(ctx context.Context, sb *sandboxv1beta1.Sandbox, mode sandboxv1beta1.SandboxOperatingMode) (int64, *httperr.Error) {
	gen, err := wake.SetMode(ctx, a.kube, sb, mode)
	if err != nil {
		return 0, e2bKubeError(err, "setting Sandbox "+sb.Name+" "+string(mode))
	}
	return gen, nil
}

// e2bClaim reads the claim id as the caller: 404 when it does not exist or is being deleted.
func (a *API) e2bClaim(ctx context.Context, c *e2bCaller, id string) (*extv1beta1.SandboxClaim, *httperr.Error) {
	if len(validation.IsDNS1123Label(id)) > 0 {
		return nil, httperr.Errorf(http.StatusNotFound, "sandbox %q not found", httperr.Clip(id))
	}
	cl := &extv1beta1.SandboxClaim{}
	if err := a.kube.Get(ctx, objectKey(c.namespace, id), cl); err != nil {
		return nil, e2bKubeError(err, "reading SandboxClaim "+id)
	}
	if cl.DeletionTimestamp != nil {
		return nil, httperr.Errorf(http.StatusNotFound, "sandbox %s not found: it is being killed", id)
	}
	return cl, nil
}

// e2bClaimSandbox reads the claim id and its sandbox, both as the caller.
func (a *API) e2bClaimSandbox(ctx context.Context, c *e2bCaller, id string) (*extv1beta1.SandboxClaim, *sandboxv1beta1.Sandbox, *httperr.Error) {
	cl, herr := a.e2bClaim(ctx, c, id)
	if herr != nil {
		return nil, nil, herr
	}
	if cl.Status.Sandbox.Name == "" {
		return nil, nil, httperr.Errorf(http.StatusConflict, "sandbox %s has no Kubernetes Sandbox yet (or any more); retry shortly", id)
	}
	sb := &sandboxv1beta1.Sandbox{}
	if err := a.kube.Get(ctx, objectKey(c.namespace, cl.Status.Sandbox.Name), sb); err != nil {
		return nil, nil, e2bKubeError(err, "reading Sandbox "+cl.Status.Sandbox.Name)
	}
	if !claimOwns(sb, cl.UID) {
		return nil, nil, httperr.Errorf(http.StatusNotFound, "sandbox %s not found: its Kubernetes Sandbox is gone", id)
	}
	return cl, sb, nil
}

// e2bDetailOf describes a claim as E2B lists sandboxes; its state comes from its sandbox in the
// router's cache (the caller has listed the claim already).
func (a *API) e2bDetailOf(ctx context.Context, cl *extv1beta1.SandboxClaim) e2bDetail {
	d := e2bDetail{TemplateID: claimTemplate(cl), SandboxID: cl.Name, ClientID: e2bClientID, StartedAt: cl.CreationTimestamp.UTC(),
		EnvdVersion: contract.E2BEnvdVersion, Metadata: e2bMetadata(cl), State: e2bRunning, CPUCount: 1, MemoryMB: 128}
	if lc := cl.Spec.Lifecycle; lc != nil && lc.ShutdownTime != nil {
		d.EndAt = lc.ShutdownTime.UTC()
	}
	info, endAt := a.e2bLifecycleOf(ctx, cl)
	d.Lifecycle = &info
	if !endAt.IsZero() {
		d.EndAt = endAt
	}
	if name := cl.Status.Sandbox.Name; name != "" {
		if sb, _ := a.deps.Sandbox(ctx, cl.Namespace, name); sb != nil && sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
			d.State = e2bPaused
		}
	}
	return d
}

func claimTemplate(cl *extv1beta1.SandboxClaim) string {
	if cl.Spec.SnapshotRef != nil {
		return cl.Spec.SnapshotRef.Name // started from a snapshot: E2B's template is the snapshot
	}
	if cl.Spec.WarmPoolRef != nil {
		return cl.Spec.WarmPoolRef.Name
	}
	if cl.Spec.SandboxTemplateRef != nil {
		return cl.Spec.SandboxTemplateRef.Name
	}
	return ""
}

// neverE2B is the answer of a wait for a sandbox that will never be what the call waits for
// (api/v1beta1's and api/extensions/v1beta1's terminal reasons: it expired, or its Pod ended), at
// once rather than after --wake-timeout.
func neverE2B(ns, name, what string, ready *metav1.Condition) *httperr.Error {
	reason, msg := "", ""
	if ready != nil {
		reason, msg = ready.Reason, ready.Message
	}
	return httperr.Errorf(http.StatusConflict, "sandbox %s will never be %s: Ready is False (%s: %s); create a new sandbox "+
		"(look at this one with: kubectl describe sandboxclaim -n %s %s)", name, what, reason, msg, ns, name)
}

// waitE2BReady waits, in the router's cache, for the claim (by UID) to be Ready: E2B's create
// and resume answer once the sandbox runs. Its Sandbox's status must be of generation minGen or
// later (the resume's patch), so a Ready left from before a pause does not count.
func (a *API) waitE2BReady(ctx context.Context, claim *extv1beta1.SandboxClaim, minGen int64) (*extv1beta1.SandboxClaim, *httperr.Error) {
	var cl *extv1beta1.SandboxClaim
	herr := a.awaitE2B(ctx, func(ctx context.Context) (bool, *httperr.Error) {
		var herr *httperr.Error
		if cl, herr = a.deps.Claim(ctx, claim.Namespace, claim.Name); herr != nil {
			return false, herr
		}
		if cl == nil || cl.UID != claim.UID {
			return false, nil
		}
		if _, terminal := extv1beta1.ClaimReadiness(cl); terminal != "" {
			return false, neverE2B(cl.Namespace, cl.Name, "ready", meta.FindStatusCondition(cl.Status.Conditions, extv1beta1.ClaimConditionReady))
		}
		if !meta.IsStatusConditionTrue(cl.Status.Conditions, extv1beta1.ClaimConditionReady) {
			return false, nil
		}
		sb, _ := a.deps.Sandbox(ctx, cl.Namespace, cl.Status.Sandbox.Name)
		if sb == nil || !claimOwns(sb, cl.UID) || sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended || sb.Generation < minGen {
			return false, nil
		}
		ready, terminal := sandboxv1beta1.SandboxReadiness(sb)
		if terminal != "" {
			return false, neverE2B(sb.Namespace, sb.Name, "ready", meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady))
		}
		return ready, nil
	}, func() *httperr.Error {
		why := "it was deleted"
		if cl != nil {
			why = "its conditions: " + claimConditionSummary(cl)
		}
		return httperr.Errorf(http.StatusGatewayTimeout, "sandbox %s was not ready within %s (%s); it goes on starting", claim.Name, a.cfg.WakeTimeout, why)
	}, objectKey(claim.Namespace, claim.Name)) // events of its sandbox wake the claim's waits too
	if herr != nil {
		return nil, herr
	}
	return cl, nil
}

// waitE2BGone waits until the router's cache has no claim of cl's UID.
func (a *API) waitE2BGone(ctx context.Context, cl *extv1beta1.SandboxClaim) *httperr.Error {
	return a.awaitE2B(ctx, func(ctx context.Context) (bool, *httperr.Error) {
		got, herr := a.deps.Claim(ctx, cl.Namespace, cl.Name)
		return herr == nil && (got == nil || got.UID != cl.UID), herr
	}, func() *httperr.Error {
		return httperr.Errorf(http.StatusGatewayTimeout, "sandbox %s is being killed but its SandboxClaim was not gone within %s (finalizers?)", cl.Name, a.cfg.WakeTimeout)
	}, objectKey(cl.Namespace, cl.Name))
}

func claimConditionSummary(cl *extv1beta1.SandboxClaim) string {
	c := meta.FindStatusCondition(cl.Status.Conditions, extv1beta1.ClaimConditionReady)
	if c == nil {
		return "no Ready condition yet"
	}
	return "Ready=" + string(c.Status) + " " + c.Reason + ": " + c.Message
}

// writeE2BSandbox answers E2B's Sandbox for a ready claim (as the router's cache holds it, whose
// spec is trimmed: hence templateID), with a new envd access token that lives until shutdown.
func (a *API) writeE2BSandbox(w http.ResponseWriter, r *http.Request, c *e2bCaller, code int, templateID string,
	cl *extv1beta1.SandboxClaim, shutdown *metav1.Time) *httperr.Error {
	tok, herr := a.e2bAccessToken(r.Context(), c, cl.Namespace, cl.Name, shutdown)
	if herr != nil {
		return herr
	}
	httperr.WriteJSON(w, code, a.e2bSandboxOf(r, templateID, cl, tok))
	return nil
}

// e2bSandboxOf is E2B's answer for the claim cl, its envd access token tok.
func (a *API) e2bSandboxOf(r *http.Request, templateID string, cl *extv1beta1.SandboxClaim, tok string) *e2bSandbox {
	return &e2bSandbox{TemplateID: templateID, SandboxID: cl.Name, ClientID: e2bClientID,
		EnvdVersion: contract.E2BEnvdVersion, EnvdAccessToken: tok, TrafficAccessToken: tok, Domain: sandboxDomain(a.cfg.Domain, r)}
}

// e2bMinTokenTTL is the shortest lifetime of an envd access token: a sandbox whose timeout is
// about to pass still gets a token a command can be sent with.
const e2bMinTokenTTL = time.Minute

// e2bAccessToken mints the envd access token of claim ns/name for the caller, through
// Deps.MintClaimToken, so only a caller RBAC allows to create sandboxclaims/connect on it gets one.
// E2B's SDKs take the token on create, connect and getInfo and keep it, so it lives as long as
// the sandbox's timeout then (its claim's shutdownTime, when the claim and every token of it
// die), at least e2bMinTokenTTL and at most --claim-token-max-ttl. A sandbox whose timeout is
// extended later needs Sandbox.connect for a token that lasts as long (docs/e2b.md).
func (a *API) e2bAccessToken(ctx context.Context, c *e2bCaller, ns, name string, shutdown *metav1.Time) (string, *httperr.Error) {
	now := a.deps.Now()
	expiry := now.Add(a.cfg.ClaimTokenMaxTTL)
	if shutdown != nil && shutdown.Before(&metav1.Time{Time: expiry}) {
		expiry = shutdown.Time
	}
	if floor := now.Add(min(e2bMinTokenTTL, a.cfg.ClaimTokenMaxTTL)); expiry.Before(floor) {
		expiry = floor
	}
	tok, herr := a.deps.MintClaimToken(ctx, c.user, ns, name, expiry)
	if herr != nil {
		return "", httperr.Errorf(herr.Code, "the envd access token of sandbox %s: %s", name, herr.Msg)
	}
	return tok, nil
}

// claimShutdown is the claim's shutdownTime, or nil.
func claimShutdown(cl *extv1beta1.SandboxClaim) *metav1.Time {
	if cl.Spec.Lifecycle == nil {
		return nil
	}
	return cl.Spec.Lifecycle.ShutdownTime
}

// decodeE2B reads a JSON body into v; an empty body leaves v as it is.
func decodeE2B(r *http.Request, v any) *httperr.Error {
	err := json.NewDecoder(io.LimitReader(r.Body, e2bMaxBody)).Decode(v)
	if err != nil && !errors.Is(err, io.EOF) {
		return httperr.Errorf(http.StatusBadRequest, "the body is not the JSON expected: %v", err)
	}
	return nil
}

// e2bKubeError turns an API server's answer to the caller's request into E2B's status codes.
func e2bKubeError(err error, doing string) *httperr.Error {
	code := http.StatusInternalServerError
	switch {
	case apierrors.IsNotFound(err):
		code = http.StatusNotFound
	case apierrors.IsUnauthorized(err):
		code = http.StatusUnauthorized
	case apierrors.IsForbidden(err):
		code = http.StatusForbidden
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		code = http.StatusConflict
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		code = http.StatusBadRequest
	case apierrors.IsTooManyRequests(err):
		code = http.StatusTooManyRequests
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code = http.StatusGatewayTimeout
	}
	return httperr.Errorf(code, "%s: %v", doing, err)
}
