package tsweb

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/api/meta"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/clientenv"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// page is the test page: index.html and test.js, which imports the bundle as sdk.js.
//
//go:embed page
var page embed.FS

// result is what test.js reports in #result.
type result struct {
	Fatal    string   `json:"fatal"`
	Run      string   `json:"run"`
	Exit     int      `json:"exit"`
	Chunks   []string `json:"chunks"`
	Read     string   `json:"read"`
	Size     int      `json:"size"`
	List     []string `json:"list"`
	Other    *failure `json:"other"`
	NoCORS   *failure `json:"noCORS"`
	Download *failure `json:"download"`
}

// failure is an error the page caught: the SDK's class name, HTTP status and message.
type failure struct {
	Name    string `json:"name"`
	Status  *int   `json:"status"`
	Message string `json:"message"`
}

// TestWebSDKInChromium: a page from another origin, with a claim token and @kubox/sdk/web alone,
// runs a command and reads its output, streams a started command's output, writes, reads, stats
// and lists a file in the claim's sandbox through a router that allows its origin; the same token
// for another claim's name gets the router's refusal as the SDK's error, a router that does not
// allow the origin gets an error naming --cors-allowed-origins, and download (a local file) says
// it is not there.
func TestWebSDKInChromium(t *testing.T) {
	bundle := bundleWeb(t)
	pages := httptest.NewServer(pageHandler(t, bundle))
	t.Cleanup(pages.Close)
	e := clientenv.Setup(t, env)
	corsRouter := e.StartRouter(t, func(c *router.Config) { c.CORSAllowedOrigins = []string{pages.URL} })
	claim := claimSandbox(t, e, "web")
	token := mintToken(t, e, claim)

	hash := url.Values{"router": {corsRouter}, "plain": {e.RouterURL}, "ns": {e.NS}, "claim": {claim}, "token": {token}}
	res := runPage(t, pages.URL+"/#"+hash.Encode())
	if res.Fatal != "" {
		t.Fatalf("the page failed: %s", res.Fatal)
	}
	if res.Run != "web-42\n" {
		t.Errorf("run's stdout %q; want %q", res.Run, "web-42\n")
	}
	if res.Exit != 0 || strings.Join(res.Chunks, "") != "one\ntwo\n" || len(res.Chunks) < 2 {
		t.Errorf("start: exit %d, stdout in events %q; want 0 and \"one\\n\", \"two\\n\" as they were written", res.Exit, res.Chunks)
	}
	if res.Read != "from the browser" || res.Size != len("from the browser") || !slices.Contains(res.List, "web.txt") {
		t.Errorf("files: read %q, size %d, list %v; want the file written", res.Read, res.Size, res.List)
	}
	if f := res.Other; f == nil || f.Status == nil || (*f.Status != http.StatusForbidden && *f.Status != http.StatusNotFound) ||
		!strings.Contains(f.Message, "someone-elses") {
		t.Errorf("another claim's name: %+v; want the router's 403 or 404 naming claim someone-elses", f)
	}
	if f := res.NoCORS; f == nil || f.Name != "SandboxConnectionError" || !strings.Contains(f.Message, "--cors-allowed-origins") {
		t.Errorf("a router without CORS for the page: %+v; want SandboxConnectionError naming --cors-allowed-origins", f)
	}
	if f := res.Download; f == nil || f.Name != "ConfigError" || !strings.Contains(f.Message, "files.read") {
		t.Errorf("files.download in a browser: %+v; want ConfigError pointing at files.read", f)
	}
}

// bundleWeb bundles sdk/typescript/dist/web.js for the browser with the SDK's esbuild; esbuild
// fails on an import of a node:* module, which a browser does not have.
func bundleWeb(t *testing.T) []byte {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "sdk", "typescript")
	for _, need := range []string{"dist/web.js", "node_modules/.bin/esbuild"} {
		if _, err := os.Stat(filepath.Join(dir, need)); err != nil {
			t.Fatalf("%s is missing (%v): run `make test-ts`, which installs the SDK's dependencies and builds it", need, err)
		}
	}
	out := filepath.Join(t.TempDir(), "sdk.js")
	cmd := exec.CommandContext(t.Context(), filepath.Join(dir, "node_modules/.bin/esbuild"), "dist/web.js", "--bundle",
		"--platform=browser", "--format=esm", "--target=es2022", "--outfile="+out)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bundling @kubox/sdk/web for the browser: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"node:`)) {
		t.Fatal("the browser bundle of @kubox/sdk/web refers to a node: module")
	}
	return b
}

// pageHandler serves the test page and the bundle as sdk.js.
func pageHandler(t *testing.T, bundle []byte) http.Handler {
	sub, err := fs.Sub(page, "page")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServerFS(sub))
	mux.HandleFunc("/sdk.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write(bundle)
	})
	return mux
}

// claimSandbox claims a sandbox of the pool python and returns the claim's name once it is Ready.
func claimSandbox(t *testing.T, e *clientenv.Env, name string) string {
	t.Helper()
	c := testutil.MakeClaim(name, e.NS).WarmPool("python").Obj()
	env.Create(t, c)
	framework.WaitForObject(t, env, c, func(c *extv1beta1.SandboxClaim) (bool, string) {
		return meta.IsStatusConditionTrue(c.Status.Conditions, extv1beta1.ClaimConditionReady) && c.Status.Sandbox.Name != "",
			fmt.Sprintf("claim %s is not Ready: %v", name, c.Status.Conditions)
	})
	return name
}

// mintToken mints a claim token for claim as ServiceAccount dev (`kubox token`).
func mintToken(t *testing.T, e *clientenv.Env, claim string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		fmt.Sprintf("%s/v1/claims/%s/%s/token", e.RouterURL, e.NS, claim), strings.NewReader(`{"ttlSeconds": 600}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.DevToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("minting a claim token: %v", err)
	}
	defer func() { _ = res.Body.Close() }()
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || res.StatusCode != http.StatusOK || tok.Token == "" {
		t.Fatalf("minting a claim token: %d, %v", res.StatusCode, err)
	}
	return tok.Token
}

// runPage opens pageURL in a headless Chromium and returns what the page reports.
func runPage(t *testing.T, pageURL string) result {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("Debian's Chromium is not installed: run `make chromium-deps` (%v)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelRun := context.WithTimeout(bctx, framework.DefaultTimeout)
	defer cancelRun()
	if _, err := chromedp.Run(ctx, chromedp.Steps(chromedp.Navigate(pageURL), chromedp.WaitVisible(chromedp.CSS(`#result[data-done]`)))); err != nil {
		t.Fatalf("running the page: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#result")))
	if err != nil {
		t.Fatalf("running the page: %v", err)
	}
	var res result
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		t.Fatalf("the page's result %q: %v", text, err)
	}
	t.Logf("the page reported: %s", text)
	return res
}
