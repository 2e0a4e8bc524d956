package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/clientenv"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestDashboard logs in with a token, sees a claimed sandbox listed, types a command in its
// terminal and reads the output from the page, and uploads a file and sees it listed.
func TestDashboard(t *testing.T) {
	// The sandboxes' agents run in this process, and their shells on this host with its
	// environment: keep the host's ~/.bashrc, whatever it does, out of the terminal.
	t.Setenv("HOME", t.TempDir())
	e := clientenv.Setup(t, env)
	// The dashboard also shows pools and Events: let dev read them.
	env.Grant(t, e.NS, "dev", "dev-dashboard", readRule(extv1beta1.GroupVersion.Group, "sandboxwarmpools"), readRule("", "events"))
	sb := claim(t, e, "web")
	b := newBrowser(t)

	page := b.tab(t)
	run(t, page, "opening the login page", chromedp.Navigate(e.RouterURL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	paint := get(t, page, "reading the first paint", chromedp.Evaluate[float64](firstPaintJS))
	t.Logf("First contentful paint of the login page: %.0f ms", paint)
	b.screenshot(t, page, "login")

	login(t, page, e.DevToken)
	run(t, page, "waiting for the sandbox in the list", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-sandbox=%q]`, sb))))
	row := get(t, page, "reading the sandbox's row", chromedp.Text(chromedp.CSS(fmt.Sprintf(`tr[data-sandbox=%q]`, sb))))
	if !strings.Contains(row, "Ready") || !strings.Contains(row, "SandboxClaim/web") {
		t.Errorf("The overview's row of Sandbox %s says %q; want it Ready and owned by SandboxClaim/web", sb, row)
	}
	b.screenshot(t, page, "overview")

	run(t, page, "opening the sandbox's page", chromedp.Navigate(sandboxURL(e, sb)),
		chromedp.WaitVisible(chromedp.CSS("#suspend")), chromedp.WaitVisible(chromedp.CSS("#terminal .xterm-rows")))
	waitText(t, page, "#terminal-status", "Connected")
	// Type once the shell has prompted: input that comes before it sets up its line editor is lost.
	waitText(t, page, "#terminal .xterm-rows", "#")
	run(t, page, "typing in the terminal", chromedp.Focus(chromedp.CSS("#terminal .xterm-helper-textarea")), typeText("echo dash-$((6*7))"),
		chromedp.KeyEvent("\r"))
	// The typed line is echo dash-$((6*7)): only the shell's output says dash-42.
	waitText(t, page, "#terminal .xterm-rows", "dash-42")
	b.screenshot(t, page, "terminal")

	file := filepath.Join(t.TempDir(), "hello.txt")
	if err := os.WriteFile(file, []byte("hello from the browser\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, page, "opening the files", chromedp.Click(chromedp.CSS("#tab-files")), chromedp.WaitVisible(chromedp.CSS("#files p, #files table")),
		chromedp.SetUploadFiles(chromedp.CSS("#upload"), []string{file}),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-file="hello.txt"]`)))
	b.screenshot(t, page, "files")
	code, body := apiCall(t, e, e.DevToken, http.MethodGet, fmt.Sprintf("namespaces/%s/sandboxes/%s/files/content?path=%s", e.NS, sb, url.QueryEscape("/hello.txt")))
	if code != http.StatusOK || body != "hello from the browser\n" {
		t.Errorf("Downloading /hello.txt as dev: %d %q; want 200 and what the browser uploaded", code, body)
	}
}

// TestDashboardRBAC checks that a viewer whose Role lacks patch sees no suspend button, and
// that the API refuses such a viewer's suspend (403): the page's gating is a courtesy, RBAC is
// the check.
func TestDashboardRBAC(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // see TestDashboard
	e := clientenv.Setup(t, env)
	sb := claim(t, e, "ro")
	tok := env.ServiceAccountToken(t, e.NS, "reader")
	env.Grant(t, e.NS, "reader", "reader", readRule(sandboxv1beta1.GroupVersion.Group, "sandboxes"),
		readRule(extv1beta1.GroupVersion.Group, "sandboxclaims", "sandboxwarmpools"), readRule("", "events"),
		framework.ConnectRule(sandboxv1beta1.GroupVersion.Group, "sandboxes"))
	b := newBrowser(t)
	page := b.tab(t)
	run(t, page, "opening the login page", chromedp.Navigate(e.RouterURL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, page, tok)
	run(t, page, "opening the sandbox's page", chromedp.Navigate(sandboxURL(e, sb)),
		chromedp.WaitVisible(chromedp.CSS("#sandbox-head h1")), chromedp.WaitVisible(chromedp.CSS("#terminal .xterm-rows")))
	buttons := get(t, page, "reading the actions", chromedp.Evaluate[[]string](`[...document.querySelectorAll(".actions button")].map(b => b.id)`))
	if len(buttons) != 0 {
		t.Errorf("A viewer without patch or delete sees the actions %v; want none", buttons)
	}
	b.screenshot(t, page, "readonly")
	for _, action := range []string{"suspend", "resume", "extend"} {
		code, body := apiCall(t, e, tok, http.MethodPost, fmt.Sprintf("namespaces/%s/sandboxes/%s/%s", e.NS, sb, action))
		if code != http.StatusForbidden {
			t.Errorf("POST %s as a viewer without patch: %d %s; want 403", action, code, body)
		}
	}
	if code, body := apiCall(t, e, tok, http.MethodDelete, fmt.Sprintf("namespaces/%s/sandboxes/%s", e.NS, sb)); code != http.StatusForbidden {
		t.Errorf("DELETE as a viewer without delete: %d %s; want 403", code, body)
	}
	// The same call succeeds for dev once its Role has patch on the claim: the 403 above is RBAC's.
	env.Grant(t, e.NS, "dev", "dev-extend", rbacv1.PolicyRule{APIGroups: []string{extv1beta1.GroupVersion.Group},
		Resources: []string{"sandboxclaims"}, Verbs: []string{"patch"}})
	framework.Eventually(t, func() (bool, string) {
		code, body := apiCall(t, e, e.DevToken, http.MethodPost, fmt.Sprintf("namespaces/%s/sandboxes/%s/extend", e.NS, sb))
		return code == http.StatusOK, fmt.Sprintf("POST extend as dev: %d %s; want 200", code, body)
	})
	c := &extv1beta1.SandboxClaim{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: e.NS, Name: "ro"}, c); err != nil {
		t.Fatal(err)
	}
	if lc := c.Spec.Lifecycle; lc == nil || lc.ShutdownTime == nil || time.Until(lc.ShutdownTime.Time) < 50*time.Minute {
		t.Errorf("After extend, claim ro's lifecycle is %+v; want a shutdownTime about an hour away", lc)
	}
	// noconnect may patch sandboxes but not connect: a suspend button, and no terminal.
	page = b.tab(t)
	run(t, page, "opening the login page", chromedp.Navigate(e.RouterURL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, page, e.NoConnectToken)
	run(t, page, "opening the sandbox's page as noconnect", chromedp.Navigate(sandboxURL(e, sb)),
		chromedp.WaitVisible(chromedp.CSS("#suspend")), chromedp.WaitVisible(chromedp.CSS("#no-connect")))
	if code, body := apiCall(t, e, e.NoConnectToken, http.MethodGet, fmt.Sprintf("namespaces/%s/sandboxes/%s/files?path=/", e.NS, sb)); code != http.StatusForbidden {
		t.Errorf("Listing files as noconnect (no sandboxes/connect): %d %s; want 403", code, body)
	}
	// Running code needs what the terminal needs: no Code tab, and 403 before anything reaches
	// the sandbox, for runs and contexts alike.
	if n := get(t, page, "reading the tabs", chromedp.Evaluate[int](`document.querySelectorAll("#tab-code").length`)); n != 0 {
		t.Errorf("noconnect (no sandboxes/connect) sees a Code tab; want none")
	}
	code := fmt.Sprintf("namespaces/%s/sandboxes/%s/code", e.NS, sb)
	for _, path := range []string{code, code + "/contexts"} {
		if status, body := apiPost(t, e, e.NoConnectToken, path, `{"code": "open('/tmp/pwned', 'w').write('x')", "language": "python"}`); status != http.StatusForbidden {
			t.Errorf("POST %s as noconnect (no sandboxes/connect): %d %s; want 403", path, status, body)
		}
	}
}

// typeText types text as a keyboard's input events: xterm.js reads it once (chromedp's key
// events for printable characters reach xterm.js as both a key press and an input).
func typeText(text string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: text})
		return err
	})
}

// firstPaintJS reads the page's first contentful paint from the Performance API.
const firstPaintJS = `(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime`

func readRule(group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch"}}
}

// claim claims a sandbox of the pool python and returns its name once the claim is Ready.
func claim(t *testing.T, e *clientenv.Env, name string) string {
	t.Helper()
	c := testutil.MakeClaim(name, e.NS).WarmPool("python").Obj()
	env.Create(t, c)
	c = framework.WaitForObject(t, env, c, func(c *extv1beta1.SandboxClaim) (bool, string) {
		return meta.IsStatusConditionTrue(c.Status.Conditions, extv1beta1.ClaimConditionReady) && c.Status.Sandbox.Name != "",
			fmt.Sprintf("claim %s is not Ready: %v", name, c.Status.Conditions)
	})
	return c.Status.Sandbox.Name
}

func sandboxURL(e *clientenv.Env, sb string) string {
	return fmt.Sprintf("%s/ui/#/sandbox/%s/%s", e.RouterURL, e.NS, sb)
}

func login(t *testing.T, page context.Context, token string) {
	t.Helper()
	run(t, page, "logging in", chromedp.SetValue(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#logout")))
}

// waitText waits until the text of sel contains want, and returns it.
func waitText(t *testing.T, page context.Context, sel, want string) string {
	t.Helper()
	var text string
	framework.Eventually(t, func() (bool, string) {
		ctx, cancel := context.WithTimeout(page, 5*time.Second)
		defer cancel()
		var err error
		if text, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel))); err != nil {
			return false, fmt.Sprintf("reading %s: %v", sel, err)
		}
		return strings.Contains(text, want), fmt.Sprintf("%s says %q; want %q in it", sel, text, want)
	})
	return text
}

// apiCall sends method to the dashboard's API path as token and returns the status and body.
func apiCall(t *testing.T, e *clientenv.Env, token, method, path string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.RouterURL+"/ui/api/"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// run runs actions in page, failing the test with what it was doing.
func run(t *testing.T, page context.Context, doing string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	get(t, page, doing, chromedp.Steps(steps...))
}

// get runs a in page and returns its value, failing the test with what it was doing.
func get[T any](t *testing.T, page context.Context, doing string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(page, framework.DefaultTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", doing, err)
	}
	return v
}

// browser is a headless Chromium.
type browser struct {
	ctx         context.Context
	screenshots string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("Debian's Chromium is not installed: run `make chromium-deps` (%v)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first Run starts the browser, which lives as long as this call's context: no timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("Starting %s: %v", path, err)
	}
	return &browser{ctx: ctx, screenshots: os.Getenv("KUBOX_SCREENSHOTS")}
}

// tab opens a new tab: a session of its own (sessionStorage is per tab).
func (b *browser) tab(t *testing.T) context.Context {
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("Opening a tab: %v", err)
	}
	return ctx
}

// screenshot writes the page as dashboard-<name>.png when KUBOX_SCREENSHOTS names a directory.
func (b *browser) screenshot(t *testing.T, page context.Context, name string) {
	t.Helper()
	if b.screenshots == "" {
		return
	}
	run(t, page, "letting the page settle", chromedp.Sleep(300*time.Millisecond))
	png := get(t, page, "taking a screenshot", chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.screenshots, "dashboard-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
