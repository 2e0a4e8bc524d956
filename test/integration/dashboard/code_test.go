package dashboard

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/clientenv"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// codeEnv is a namespace whose sandboxes (pool "python") each get a real kubox-agent on a
// loopback IP of their own that also serves the code interpreter on its contract port (49999),
// as kubox-agent does by default, with the host's python3 (Debian's, with matplotlib: `make
// python-deps`); a router; and ServiceAccount dev, who may read and connect to the sandboxes.
// It is framework.StartAgentNamespace's, with one warm member instead of clientenv's two, and a
// *clientenv.Env so that the helpers of the other tests (claim, login, apiCall) take it.
func codeEnv(t *testing.T) *clientenv.Env {
	t.Helper()
	a := env.StartAgentNamespace(t, "kubox.local/kubox-agent:dev", nil)
	e := &clientenv.Env{NS: a.NS}
	env.Create(t, a.Template("python").Obj())
	env.Create(t, testutil.MakePool("python", e.NS, "python").Replicas(1).Obj())
	_, e.RouterURL = env.StartRouter(t, e.NS, a.Key, nil)
	e.DevToken = env.ServiceAccountToken(t, e.NS, "dev")
	env.Grant(t, e.NS, "dev", "dev", readRule(sandboxv1beta1.GroupVersion.Group, "sandboxes"),
		readRule(extv1beta1.GroupVersion.Group, "sandboxclaims", "sandboxwarmpools"), readRule("", "events"),
		framework.ConnectRule(sandboxv1beta1.GroupVersion.Group, "sandboxes"))
	return e
}

// openCodeTab opens, in a new browser, sandbox sb's Code tab as dev, logged in.
func openCodeTab(t *testing.T, e *clientenv.Env, sb string) (*browser, context.Context) {
	t.Helper()
	b := newBrowser(t)
	page := b.tab(t)
	run(t, page, "opening the login page", chromedp.Navigate(e.RouterURL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, page, e.DevToken)
	run(t, page, "opening the sandbox's Code tab", chromedp.Navigate(sandboxURL(e, sb)),
		chromedp.WaitVisible(chromedp.CSS("#tab-code")), chromedp.Click(chromedp.CSS("#tab-code")),
		chromedp.WaitVisible(chromedp.CSS("#code-input")))
	return b, page
}

// runCode types code into the Code tab, runs it with Ctrl+Enter (or the Run button) and waits
// until the run has ended.
func runCode(t *testing.T, page context.Context, code string, ctrlEnter bool) {
	t.Helper()
	n := get(t, page, "counting the runs", chromedp.Evaluate[int](`document.querySelectorAll("#code-output .code-run[data-done]").length`))
	run(t, page, "typing the code", chromedp.SetValue(chromedp.CSS("#code-input"), code))
	if ctrlEnter {
		run(t, page, "pressing Ctrl+Enter", chromedp.Focus(chromedp.CSS("#code-input")),
			chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	} else {
		run(t, page, "clicking Run", chromedp.Click(chromedp.CSS("#code-run")))
	}
	framework.Eventually(t, func() (bool, string) {
		done := get(t, page, "counting the runs", chromedp.Evaluate[int](`document.querySelectorAll("#code-output .code-run[data-done]").length`))
		return done > n, fmt.Sprintf("the run of %q has not ended: %d runs done, %d before it", code, done, n)
	})
}

// lastRun is the text of the last run's output.
const lastRunJS = `(() => { const r = [...document.querySelectorAll("#code-output .code-run")].pop(); return r ? r.innerText : ""; })()`

// TestDashboardCode runs code in a sandbox's Code tab, through the router to the agent's code
// interpreter: state kept between runs of the page's context (x = 41, then x + 1 shows 42), a
// matplotlib figure shown as a PNG image, an error with its traceback (no raw ANSI codes), and
// Restart, after which the state is gone.
func TestDashboardCode(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // see TestDashboard
	e := codeEnv(t)
	sb := claim(t, e, "code")
	b, page := openCodeTab(t, e, sb)
	if lang := get(t, page, "reading the language", chromedp.Value(chromedp.CSS("#code-language"))); lang != "python" {
		t.Errorf("The Code tab's language is %q; want python by default", lang)
	}

	// The API alone, as dev, who may connect: one run, its result in the NDJSON.
	if code, body := apiPost(t, e, e.DevToken, fmt.Sprintf("namespaces/%s/sandboxes/%s/code", e.NS, sb), `{"code": "6 * 7", "language": "python"}`); code != http.StatusOK || !strings.Contains(body, `"text":"42"`) {
		t.Errorf("POST .../code as dev: %d %s; want 200 and the result 42", code, body)
	}
	runCode(t, page, "x = 41", false)
	runCode(t, page, "x + 1", true)
	if out := get(t, page, "reading the result", chromedp.Evaluate[string](lastRunJS)); strings.TrimSpace(out) != "42" {
		t.Errorf("After x = 41, the run of x + 1 shows %q; want 42 (the context keeps x)", out)
	}

	runCode(t, page, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\nprint('drawn')", false)
	src := get(t, page, "reading the image", chromedp.Evaluate[string](
		`(() => { const i = [...document.querySelectorAll("#code-output .code-run")].pop().querySelector("img"); return i ? i.src : ""; })()`))
	const pngPrefix = "data:image/png;base64,"
	if !strings.HasPrefix(src, pngPrefix) {
		t.Fatalf("The matplotlib run shows an image with src %.60q; want a PNG data URL (%s...)", src, pngPrefix)
	}
	png, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(src, pngPrefix))
	if err != nil || len(png) < 8 {
		t.Fatalf("The image's data URL does not decode (%v, %d bytes)", err, len(png))
	}
	if diff := cmp.Diff([]byte("\x89PNG\r\n\x1a\n"), png[:8]); diff != "" {
		t.Errorf("The image's first bytes are not PNG's signature (-want +got):\n%s", diff)
	}
	if out := get(t, page, "reading the output", chromedp.Evaluate[string](lastRunJS)); !strings.Contains(out, "drawn") {
		t.Errorf("The matplotlib run's output is %q; want its stdout (drawn) in it", out)
	}
	b.screenshot(t, page, "code")

	// The output is coloured as a terminal would show it: the page shows the text, not the codes.
	runCode(t, page, "def f():\n    print('\\x1b[31mred\\x1b[0m')\n    return 1/0\nf()", false)
	out := get(t, page, "reading the error", chromedp.Evaluate[string](lastRunJS))
	for _, want := range []string{"red", "ZeroDivisionError", "division by zero", "Traceback", "return 1/0"} {
		if !strings.Contains(out, want) {
			t.Errorf("The run of 1/0 shows %q; want %q in it", out, want)
		}
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "[31m") {
		t.Errorf("The run shows raw ANSI escape codes: %q", out)
	}

	run(t, page, "restarting the context", chromedp.Click(chromedp.CSS("#code-restart")))
	waitText(t, page, "#code-status", "Restarted")
	runCode(t, page, "print('x' in globals())", false)
	if out := get(t, page, "reading the output", chromedp.Evaluate[string](lastRunJS)); strings.TrimSpace(out) != "False" {
		t.Errorf("After Restart, the run shows %q; want False (the restarted context has no x)", out)
	}
}

// TestDashboardCodeOutputCannotRunInThePage is the attack: a sandbox's code returns HTML with a
// <script> and an inline handler, and an SVG with a script, each of which would set a marker on
// the dashboard's window (which holds the viewer's token). The HTML is shown in an <iframe
// sandbox> (no scripts, an opaque origin), the SVG as an <img>: the marker stays unset, and no
// script or inline SVG from the sandbox is in the page's document.
func TestDashboardCodeOutputCannotRunInThePage(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // see TestDashboard
	e := codeEnv(t)
	sb := claim(t, e, "attack")
	_, page := openCodeTab(t, e, sb)
	const mark = `try { window.parent.kuboxPwned = 1; window.top.kuboxPwned = 1; } catch (e) {} window.kuboxPwned = 1;`
	runCode(t, page, fmt.Sprintf(`class Page:
    def _repr_html_(self):
        return '<b id="hostile">hostile</b><script>%[1]s</script><img src="x" onerror="%[1]s">'
class Picture:
    def _repr_svg_(self):
        return '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>%[1]s</script><rect width="10" height="10" onload="%[1]s"/></svg>'
display_html = Page()
display_html`, mark), false)
	runCode(t, page, "Picture()", false)
	// Once the frame's document has loaded, its scripts and its image's error handler would have
	// run (a document's load event waits for both); the SVG is an image that has loaded.
	run(t, page, "waiting for the results", chromedp.WaitVisible(chromedp.CSS("#code-output iframe[data-loaded]")),
		chromedp.WaitVisible(chromedp.CSS(`#code-output img[src^="data:image/svg+xml;base64,"]`)))
	if !get(t, page, "waiting for the SVG", chromedp.Evaluate[bool](`(async () => { const i = document.querySelector('#code-output img[src^="data:image/svg+xml"]'); await i.decode().catch(() => {}); return i.complete; })()`,
		chromedp.EvalAwaitPromise)) {
		t.Fatalf("The SVG result's image has not loaded")
	}
	if pwned := get(t, page, "reading the marker", chromedp.Evaluate[bool](`window.kuboxPwned !== undefined`)); pwned {
		t.Errorf("A result's HTML or SVG ran a script in the dashboard's page (window.kuboxPwned is set)")
	}
	got := get(t, page, "inspecting the output", chromedp.Evaluate[map[string]any](`(() => {
		const o = document.querySelector("#code-output"), f = o.querySelector("iframe");
		return {scripts: o.querySelectorAll("script").length, svgs: o.querySelectorAll("svg").length,
			hostile: o.querySelectorAll("#hostile").length, sandbox: f.getAttribute("sandbox"), srcdoc: f.srcdoc.includes("hostile")};
	})()`))
	want := map[string]any{"scripts": 0.0, "svgs": 0.0, "hostile": 0.0, "sandbox": "", "srcdoc": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("The results are not confined (-want +got):\n%s", diff)
	}
}

// apiPost sends body to the dashboard's API path as token and returns the status and answer.
func apiPost(t *testing.T, e *clientenv.Env, token, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.RouterURL+"/ui/api/"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
